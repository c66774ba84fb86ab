package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// runnerDeps is what the runners' clients are built with.
type runnerDeps struct {
	client *http.Client
	tools  *pipeline.Tools
	log    *slog.Logger
}

var (
	_ healthChecker = (*pipeline.CogRunner)(nil)
	_ healthChecker = (*comfyHealth)(nil)
	_ healthChecker = (*pipeline.ChatPlanner)(nil)
	_ healthChecker = (*pipeline.SpeechServer)(nil)
	_ healthChecker = (*httpHealth)(nil)
)

// build makes the clients and the health check of r's kind. Cog runners
// get a client per task (its prediction id); command runners have no health
// check (a program is there or not, which Config checks at start).
func (r *liveRunner) build(deps runnerDeps) error {
	s := r.spec
	apiKey := ""
	if s.APIKeyEnv != "" {
		apiKey = os.Getenv(s.APIKeyEnv)
	}
	switch s.Kind {
	case RunnerCog:
		r.health = &pipeline.CogRunner{URL: s.URL, Client: deps.client, Inputs: s.Inputs}
		r.warm = true
	case RunnerComfyUI:
		wf, err := pipeline.LoadComfyWorkflow(s.Workflow)
		if err != nil {
			return fmt.Errorf("%w: runner %q (%s): %w", ErrConfig, s.Name, s.Where, err)
		}
		r.comfy = &pipeline.ComfyUIRunner{URL: s.URL, Workflow: wf, OutputNode: s.OutputNode, Client: deps.client,
			Tools: deps.tools, Logger: deps.log.With("runner", s.Name)}
		if err := r.comfy.Validate(); err != nil {
			return fmt.Errorf("%w: runner %q (%s): %w", ErrConfig, s.Name, s.Where, err)
		}
		r.health = &comfyHealth{r: r.comfy, needGB: s.GPUMemoryGB}
	case RunnerOpenAIChat:
		r.planner = &pipeline.ChatPlanner{URL: s.URL, Model: s.Model, APIKey: apiKey, Client: deps.client, Timeout: s.Timeout}
		r.health = r.planner
	case RunnerOpenAISpeech:
		r.speech = &pipeline.SpeechServer{URL: s.URL, Model: s.Model, APIKey: apiKey, Voices: pipelineVoices(s.Voices),
			Client: deps.client, Timeout: s.Timeout}
		if err := r.speech.Check(); err != nil {
			return fmt.Errorf("%w: runner %q (%s): %w", ErrConfig, s.Name, s.Where, err)
		}
		r.health = r.speech
	case RunnerHTTP:
		r.health = &httpHealth{url: s.URL, healthURL: s.HealthURL, client: deps.client}
	}
	return nil
}

// httpHealth is an http runner's health. The external runner protocol
// (pipeline/README.md) has no health route, and a server that speaks it
// may have none, so by default the check GETs the runner's own url, which
// takes renders as POSTs: any answer below 500 (405 or 404 from a server
// that serves only POST there) shows the server listens, while no answer
// or a 5xx (a proxy without its backend, a server still loading its model)
// is down. The url itself rather than its origin: behind a proxy or a
// gateway the origin may be served by something else. With health_url, a
// route that says whether the model can render, the check GETs that and
// wants 2xx or 3xx, as a Kubernetes httpGet probe does.
type httpHealth struct {
	url       string
	healthURL string       // "": GET url
	client    *http.Client // nil: http.DefaultClient
}

func (h *httpHealth) Health(ctx context.Context) error {
	target := h.url
	if h.healthURL != "" {
		target = h.healthURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("http runner %s: health check: %w", pipeline.RedactURL(h.url), err)
	}
	client := h.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req) // a user:password@ in the URL goes as basic auth, as for renders
	if err != nil {
		return fmt.Errorf("http runner %s: health check: %w", pipeline.RedactURL(h.url), err)
	}
	// Read a little so that the connection can be used again.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	switch {
	case h.healthURL != "" && resp.StatusCode >= 400:
		return fmt.Errorf("http runner %s: GET %s (health_url) answered %s, want 2xx or 3xx",
			pipeline.RedactURL(h.url), pipeline.RedactURL(h.healthURL), resp.Status)
	case resp.StatusCode >= 500:
		return fmt.Errorf("http runner %s: GET of its url answered %s: the server does not serve (a proxy without its backend, "+
			"or a model still loading); give the runner a health_url if its server has a health route", pipeline.RedactURL(h.url), resp.Status)
	}
	return nil
}

func pipelineVoices(vs []wire.Voice) []pipeline.Voice {
	out := make([]pipeline.Voice, len(vs))
	for i, v := range vs {
		out[i] = pipeline.Voice{ID: v.ID, Name: v.Name, Language: v.Language, Gender: v.Gender}
	}
	return out
}

// comfyHealth is a ComfyUI server's health: GET /system_stats answers and,
// when the runner names gpu_memory_gb, one of the server's GPUs has that
// much memory in all. Total, not free: ComfyUI keeps the models it loaded
// in VRAM, so free memory is smallest exactly when the model is ready, and
// a model's weights live on one device, so devices are not summed.
type comfyHealth struct {
	r      *pipeline.ComfyUIRunner
	needGB float64
}

func (h *comfyHealth) Health(ctx context.Context) error {
	st, err := h.r.SystemStats(ctx)
	if err != nil || h.needGB == 0 {
		return err
	}
	var most uint64
	for _, d := range st.Devices {
		if d.Type != "cpu" {
			most = max(most, d.VRAMTotal)
		}
	}
	if gb := float64(most) / (1 << 30); gb < h.needGB {
		return fmt.Errorf("comfyui runner %s: its largest GPU has %.1f GB (GET /system_stats), the runner's gpu_memory_gb is %g: "+
			"run ComfyUI on a larger GPU or lower gpu_memory_gb", pipeline.RedactURL(h.r.URL), gb, h.needGB)
	}
	return nil
}

// stageRunner is the runner that serves stage, nil when none does.
func (a *agent) stageRunner(stage string) *liveRunner {
	for _, r := range a.runners {
		for _, st := range r.spec.Stages {
			if st == stage {
				return r
			}
		}
	}
	return nil
}

// newSpeaker is what narrates on this node: espeak-ng (tools), and the
// voices of the openai-speech runners with their servers.
func newSpeaker(tools *pipeline.Tools, runners []*liveRunner) (*pipeline.SpeechRouter, error) {
	var servers []*pipeline.SpeechServer
	for _, r := range runners {
		if r.speech != nil {
			servers = append(servers, r.speech)
		}
	}
	sp, err := pipeline.NewSpeechRouter(tools, servers...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return sp, nil
}

// speechRunner is the openai-speech runner that speaks voice, nil for an
// espeak-ng voice.
func (a *agent) speechRunner(voice string) *liveRunner {
	for _, r := range a.runners {
		if r.speech == nil {
			continue
		}
		for _, v := range r.spec.Voices {
			if v.ID == voice {
				return r
			}
		}
	}
	return nil
}
