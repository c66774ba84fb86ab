package agent

import (
	"context"
	"fmt"
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
)

// build makes the clients and the health check of r's kind. Cog runners
// get a client per task (its prediction id); command and http runners have
// no health check.
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
