package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/internal/fakes"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

const cogModel = "wan-2.2-a14b"

// cogSpec is a runners-file entry for the fake Cog container f.
func cogSpec(f *fakes.Cog) RunnerSpec {
	return RunnerSpec{Name: "wan", Kind: RunnerCog, URL: f.URL(), Models: []string{cogModel}, Concurrency: 1,
		HealthInterval: 20 * time.Millisecond, Inputs: map[string]string{"prompt": "prompt"}, Where: "runners.yaml:3"}
}

// lastModels returns the models of the n-th and later advertisements'
// last (a registration or a models update), if there are n.
func lastModels(f *fakeCP, n int) ([]string, bool) {
	ads := f.snapshot().adverts
	if len(ads) < n {
		return nil, false
	}
	return ads[len(ads)-1].Models, true
}

// waitAdvertised waits for an advertisement after the first `after` that
// advertises (or withdraws) model, and returns how many there have been.
func waitAdvertised(t testing.TB, f *fakeCP, after int, model string, want bool) int {
	t.Helper()
	n := 0
	waitFor(t, "an advertisement with "+model+" advertised="+map[bool]string{true: "yes", false: "no"}[want], func() bool {
		ms, ok := lastModels(f, after+1)
		n = len(f.snapshot().adverts)
		return ok && slices.Contains(ms, model) == want
	})
	return n
}

// startCogAgent runs an agent whose runners file has cog's container for
// cogModel, and waits until it advertises the model.
func startCogAgent(t *testing.T, cog *fakes.Cog) *fakeCP {
	t.Helper()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{cogSpec(cog)}
	startAgent(t, cfg)
	waitAdvertised(t, f, 0, cogModel, true)
	return f
}

// cogRender is a 4 s 720p render of cogModel.
func cogRender(vid string) wire.Assignment {
	return assignment(vid, "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: cogModel,
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
}

func TestCogHealthGatesAdvertisedModels(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cog := newAgentFakeCog(t, "STARTING")
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{cogSpec(cog)}
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	startAgent(t, cfg)
	up := func() float64 { return gaugeValue(t, reg, "vidfarm_agent_runner_up", "cog", "wan") }

	n := waitAdvertised(t, f, 0, cogModel, false)
	if up() != 0 {
		t.Error("vidfarm_agent_runner_up is 1 for a starting container")
	}
	if ms, _ := lastModels(f, 1); !slices.Contains(ms, "sora-2") {
		t.Fatalf("first registration lacks the procedural models: %v", ms)
	}
	cog.SetHealth("READY")
	n = waitAdvertised(t, f, n, cogModel, true)
	if ads := f.snapshot().adverts; !slices.Equal(ads[len(ads)-1].WarmModels, []string{cogModel}) {
		t.Errorf("warm models = %v, want the ready container's %s", ads[len(ads)-1].WarmModels, cogModel)
	}
	if regs := len(f.snapshot().registrations); regs != 1 {
		t.Errorf("%d registrations: a runner's change should update the models in place", regs)
	}
	if up() != 1 {
		t.Error("vidfarm_agent_runner_up is 0 for a ready container")
	}

	// A render goes through the container, and the progress in its log
	// (50 % of the render) reaches the control plane before it ends.
	a := cogRender("vid_cog")
	f.enqueue(a)
	waitFor(t, "progress from the container's log", func() bool {
		return slices.ContainsFunc(f.snapshot().progress, func(p wire.ProgressRequest) bool { return p.Percent >= 50 })
	})
	close(cog.Gate)
	c := waitComplete(t, f, a.TaskID)
	if got := f.blob(c.Artifacts[ClipFile]); !bytes.Equal(got, cog.Clip) {
		t.Errorf("uploaded clip = %q, want the container's output", got)
	}
	if predicted, _ := cog.Record(); !slices.Equal(predicted, []string{predictionID(a.TaskID, c.Token)}) {
		t.Errorf("predictions = %v, want one with the task attempt's id", predicted)
	}

	// It goes away and comes back by itself.
	cog.SetHealth("DEFUNCT")
	n = waitAdvertised(t, f, n, cogModel, false)
	cog.SetHealth("READY")
	waitAdvertised(t, f, n, cogModel, true)
}

// longTask is an agent with a ready Cog runner (advertised in adverts
// advertisements) that runs a render of another model until finish.
type longTask struct {
	cog     *fakes.Cog
	agent   *running
	gate    string
	task    wire.Assignment
	adverts int
}

func startLongTask(t *testing.T, f *fakeCP) longTask {
	t.Helper()
	lt := longTask{cog: newAgentFakeCog(t, "READY"), gate: t.TempDir() + "/gate"}
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{cogSpec(lt.cog)}
	cfg.Runners = map[string][]string{"sora-2": gateRunner(t, lt.gate)}
	lt.agent = startAgent(t, cfg)
	lt.adverts = waitAdvertised(t, f, 0, cogModel, true)
	lt.task = assignment("vid_long", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "sora-2",
		Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(lt.task)
	waitFor(t, "the task to run", func() bool { return len(f.snapshot().progress) > 0 })
	return lt
}

// finish lets the render end and waits for its completion.
func (lt longTask) finish(t *testing.T, f *fakeCP) {
	t.Helper()
	if err := os.WriteFile(lt.gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitComplete(t, f, lt.task.TaskID)
}

// A runner that goes down while a task of another runner runs: the agent
// updates its models at once, keeping its credential and the task's lease.
func TestCapacityChangeKeepsRunningTasks(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	lt := startLongTask(t, f)
	lt.cog.SetHealth("SETUP_FAILED")
	waitAdvertised(t, f, lt.adverts, cogModel, false) // while the task still runs
	if rec := f.snapshot(); len(rec.registrations) != 1 || rec.inPlace != 1 || rec.held != 1 {
		t.Fatalf("%d registrations, %d updates in place, %d leases held; want 1, 1, 1", len(rec.registrations), rec.inPlace, rec.held)
	}
	lt.finish(t, f)
}

// Against a control plane without PUT /agent/v1/models the agent registers
// again, but only once the tasks running here have ended.
func TestCapacityChangeWaitsForRunningTasksOnAnOlderControlPlane(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	f.NoModelsRoute = true
	lt := startLongTask(t, f)
	lt.cog.SetHealth("SETUP_FAILED")
	waitFor(t, "the agent to notice", func() bool {
		return strings.Contains(lt.agent.logs.String(), "leasing no new work until the running tasks end")
	})
	if got := len(f.snapshot().registrations); got != lt.adverts {
		t.Fatalf("registered again (%d registrations, had %d) while a task was running: its lease would be lost", got, lt.adverts)
	}
	lt.finish(t, f)
	waitAdvertised(t, f, lt.adverts, cogModel, false)
	if got := len(f.snapshot().registrations); got != 2 {
		t.Fatalf("%d registrations, want the first and one with the model withdrawn", got)
	}
}

func TestLeaseLossCancelsCogPrediction(t *testing.T) {
	t.Parallel()
	cog := newAgentFakeCog(t, "READY")
	t.Cleanup(func() { close(cog.Gate) })
	f := startCogAgent(t, cog)
	a := cogRender("vid_lost")
	f.enqueue(a)
	waitFor(t, "the prediction", func() bool { p, _ := cog.Record(); return len(p) == 1 })
	f.expire(a.TaskID)
	want := predictionID(a.TaskID, 1)
	waitFor(t, "the cancel to reach the container", func() bool { _, c := cog.Record(); return slices.Equal(c, []string{want}) })
	if _, ok := f.complete(a.TaskID); ok {
		t.Error("a task whose lease was lost was completed")
	}
}

func TestCogClipTooShortFailsTheTask(t *testing.T) {
	t.Parallel()
	cog := newAgentFakeCog(t, "READY")
	cog.Clip = testClip(t, 1280, 720, 1)
	close(cog.Gate)
	f := startCogAgent(t, cog)
	a := cogRender("vid_short")
	f.enqueue(a)
	expectFailed(t, f, a.TaskID, "runner wan: pipeline: the runner's clip does not match the request: the clip is 1280x720, 1.00 s, "+
		"the request 1280x720 (720p 16:9), 4.00 s: too short")
}

// TestFlagRunnerClipIsChecked: a --runner command's clip is held to the
// request as a runners file runner's is; one that is too short, of another
// aspect ratio or not a video fails the task saying so, and is not
// delivered as completed.
func TestFlagRunnerClipIsChecked(t *testing.T) {
	t.Parallel()
	const clipDoesNotMatch = "runner wan-2.2-a14b: pipeline: the runner's clip does not match the request: "
	tests := []struct {
		name string
		clip func(t *testing.T) []byte
		res  string
		want string
	}{
		{"too short", func(t *testing.T) []byte { return testClip(t, 1280, 720, 1) }, "720p",
			clipDoesNotMatch + "the clip is 1280x720, 1.00 s, the request 1280x720 (720p 16:9), 5.00 s: too short"},
		{"square for 16:9", func(t *testing.T) []byte { return testClip(t, 320, 320, 5) }, "480p",
			clipDoesNotMatch + "the clip is 320x320, 5.00 s, the request 854x480 (480p 16:9), 5.00 s: another aspect ratio"},
		{"not a video", func(*testing.T) []byte { return []byte("not really a clip") }, "480p",
			clipDoesNotMatch + "the output is not a video ffprobe can read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireTools(t, "ffmpeg", "ffprobe")
			clip := filepath.Join(t.TempDir(), "clip")
			if err := os.WriteFile(clip, tc.clip(t), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFakeCP(t)
			cfg := testConfig(t, f)
			const script = `req=$(cat)
out=$(printf '%s' "$req" | sed -n 's/.*"output_path":"\([^"]*\)".*/\1/p')
cp "$1" "$out"
echo "progress 100"`
			cfg.Runners = map[string][]string{"wan-2.2-a14b": {"sh", "-c", script, "sh", clip}}
			startAgent(t, cfg)
			a := assignment("vid_flagclip", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "wan-2.2-a14b",
				Prompt: "p", Resolution: tc.res, AspectRatio: "16:9", DurationSeconds: 5})
			f.enqueue(a)
			waitFor(t, "the task to end", func() bool {
				_, failed := f.failed(a.TaskID)
				_, completed := f.complete(a.TaskID)
				return failed || completed
			})
			if _, ok := f.complete(a.TaskID); ok {
				t.Fatal("a task whose clip does not match the request was completed")
			}
			expectFailed(t, f, a.TaskID, tc.want)
		})
	}
}

func TestRunnerConfigRefused(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cog := newAgentFakeCog(t, "READY")
	comfy := RunnerSpec{Name: "comfy", Kind: RunnerComfyUI, URL: "http://127.0.0.1:8188", Models: []string{"ltx-video-13b"},
		Workflow: filepath.Join(t.TempDir(), "gone.json"), Where: "runners.yaml:9"}
	voice := []wire.Voice{{ID: "af_bella", Name: "Bella", Language: "en-us", Gender: "female"}}
	kokoro := RunnerSpec{Name: "kokoro", Kind: RunnerOpenAISpeech, URL: "http://127.0.0.1:8880", Model: "kokoro", Stages: []string{StageTTS}, Voices: voice}
	other := RunnerSpec{Name: "other", Kind: RunnerOpenAISpeech, URL: "http://127.0.0.1:8881", Model: "tts-1", Voices: voice}
	tests := []struct {
		name  string
		specs []RunnerSpec
		flags map[string][]string
		msg   string
	}{
		{"workflow gone since the file was checked", []RunnerSpec{cogSpec(cog), comfy}, nil,
			`runner "comfy" (runners.yaml:9): pipeline: invalid ComfyUI workflow`},
		{"a voice offered by two speech servers", []RunnerSpec{kokoro, other}, nil,
			`voice id "af_bella" is offered by both`},
		{"model in the file and a flag", []RunnerSpec{cogSpec(cog)}, map[string][]string{cogModel: {"/bin/true"}},
			`model "wan-2.2-a14b" has a runner in the runners file ("wan" at runners.yaml:3) and one from --runner`},
	}
	for _, tc := range tests {
		cfg := testConfig(t, f)
		cfg.RunnerSpecs, cfg.Runners = tc.specs, tc.flags
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := Run(ctx, cfg)
		cancel()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: Run = %v, want ErrConfig saying %q", tc.name, err, tc.msg)
		}
	}
	if regs := f.snapshot().registrations; len(regs) != 0 {
		t.Errorf("a refused configuration registered: %d registrations", len(regs))
	}
}

// funcRunner is a pipeline.Runner made of a function.
type funcRunner func(ctx context.Context, req pipeline.RenderRequest, progress pipeline.ProgressFunc) error

func (f funcRunner) Render(ctx context.Context, req pipeline.RenderRequest, progress pipeline.ProgressFunc) error {
	return f(ctx, req, progress)
}

func TestGuardedRunnerSlotsAndTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	inner := funcRunner(func(ctx context.Context, _ pipeline.RenderRequest, _ pipeline.ProgressFunc) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	g := &guardedRunner{inner: inner, slots: make(chan struct{}, 2), name: "wan"}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if err := g.Render(context.Background(), pipeline.RenderRequest{}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, "two renders to run", func() bool { mu.Lock(); defer mu.Unlock(); return running == 2 })
	close(release)
	wg.Wait()
	if most != 2 {
		t.Errorf("at most %d renders ran at once, want the runner's concurrency 2", most)
	}

	g = &guardedRunner{inner: funcRunner(func(ctx context.Context, _ pipeline.RenderRequest, _ pipeline.ProgressFunc) error {
		<-ctx.Done()
		return context.Cause(ctx)
	}), timeout: time.Millisecond, name: "wan"}
	if err := g.Render(context.Background(), pipeline.RenderRequest{}, nil); err == nil || !strings.Contains(err.Error(), "runner wan: the task ran past its timeout of 1ms") {
		t.Errorf("Render = %v, want the runner's timeout", err)
	}
}

func TestRunnersFitAndMerge(t *testing.T) {
	t.Parallel()
	gpus := []scheduler.GPU{{ID: "a", MemoryTotalGB: 24, MemoryFreeGB: 2}, {ID: "b", MemoryTotalGB: 79.19, MemoryFreeGB: 79}}
	specs := []RunnerSpec{
		{Name: "small", Kind: RunnerCommand, Command: []string{"/bin/true"}, Models: []string{"mochi-1"}, GPUMemoryGB: 40},
		{Name: "huge", Kind: RunnerCommand, Command: []string{"/bin/true"}, Models: []string{"veo-3", "sora-2"}, GPUMemoryGB: 100},
		{Name: "any", Kind: RunnerHTTP, URL: "http://127.0.0.1:1", Models: []string{"veo-2"}},
	}
	merged, err := mergeRunners(specs, map[string][]string{"kling-2.1-pro": {"http://127.0.0.1:9/render"}, "vidu-q1": {"/opt/vidu.sh", "--fast"}},
		DefaultRunnerHealthInterval)
	if err != nil {
		t.Fatal(err)
	}
	if got := merged[3]; got.Kind != RunnerHTTP || got.URL != "http://127.0.0.1:9/render" || got.Where != flagRunner || got.Concurrency != 0 ||
		got.HealthInterval != DefaultRunnerHealthInterval || got.UnhealthyAfter != DefaultRunnerUnhealthyAfter {
		t.Errorf("--runner URL = %+v, want kind http without a concurrency limit, with the runners file's health check defaults", got)
	}
	if got := merged[4]; got.Kind != RunnerCommand || !slices.Equal(got.Command, []string{"/opt/vidu.sh", "--fast"}) {
		t.Errorf("--runner command = %+v", got)
	}
	live, err := newLiveRunners(merged, gpus, runnerDeps{})
	if err != nil {
		t.Fatal(err)
	}
	out := withdrawn(live)
	// The http runners, of the file and of --runner, start down until
	// their first health check passes; a --runner command has none.
	if want := map[string]bool{"veo-3": true, "sora-2": true, "veo-2": true, "kling-2.1-pro": true}; !maps.Equal(out, want) {
		t.Errorf("withdrawn = %v, want the models of the runner no GPU fits and of the unchecked http runners: %v", out, want)
	}
}

// healthSeq answers a health check with each of its errors in turn.
type healthSeq struct {
	errs []error
	i    int
}

func (h *healthSeq) Health(context.Context) error { h.i++; return h.errs[h.i-1] }

// A healthy runner is withdrawn only after unhealthy_after failed checks
// in a row, and one passing check brings it back.
func TestRunnerHealthHysteresis(t *testing.T) {
	t.Parallel()
	bad := errors.New("connection refused")
	steps := []struct {
		err         error
		changed, up bool
	}{
		{nil, true, true}, {bad, false, true}, {bad, false, true}, {nil, false, true}, // two failures, then fine
		{bad, false, true}, {bad, false, true}, {bad, true, false}, // the third in a row withdraws it
		{bad, false, false}, {nil, true, true},
	}
	h := &healthSeq{}
	for _, s := range steps {
		h.errs = append(h.errs, s.err)
	}
	r := &liveRunner{spec: RunnerSpec{Name: "x", UnhealthyAfter: 3}, health: h, fits: true}
	for i, s := range steps {
		changed, _, err := r.check(context.Background())
		if changed != s.changed || r.isUp() != s.up || (err == nil) != (s.err == nil) {
			t.Fatalf("check %d: changed %v up %v err %v; want %v %v %v", i+1, changed, r.isUp(), err, s.changed, s.up, s.err)
		}
	}
}

// An http runner's health check: by default a GET of its url, where any
// answer below 500 shows a server listens (the protocol's route takes
// POSTs); with health_url a GET of that, wanting 2xx or 3xx.
func TestHTTPRunnerHealth(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name, url, healthURL string
		want                 string // "": healthy
	}{
		{"url: POST only (405)", srv.URL + "/405", "", ""},
		{"url: no such route (404)", srv.URL + "/404", "", ""},
		{"url: 200", srv.URL + "/200", "", ""},
		{"url: proxy without its backend (502)", srv.URL + "/502", "", "GET of its url answered 502 Bad Gateway"},
		{"url: nothing listens", closed.URL + "/render", "", "connection refused"},
		{"health_url: 200", srv.URL + "/405", srv.URL + "/200", ""},
		{"health_url: 404", srv.URL + "/405", srv.URL + "/404", "(health_url) answered 404 Not Found, want 2xx or 3xx"},
		{"health_url: loading (503)", srv.URL + "/405", srv.URL + "/503", "answered 503 Service Unavailable"},
		{"health_url: nothing listens", srv.URL + "/405", closed.URL + "/healthz", "connection refused"},
	}
	for _, tc := range tests {
		err := (&httpHealth{url: tc.url, healthURL: tc.healthURL}).Health(t.Context())
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Health = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// An http runner of the runners file whose server goes away is withdrawn
// after unhealthy_after failed checks, as the other kinds are, and
// vidfarm_agent_runner_up says so.
func TestHTTPRunnerDownWithdrawsItsModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, healthPath string // healthPath "": no health_url
	}{
		{"url", ""},
		{"health_url", "/healthz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/healthz" {
					return
				}
				http.Error(w, "POST a render here", http.StatusMethodNotAllowed)
			}))
			t.Cleanup(srv.Close)
			spec := RunnerSpec{Name: "server", Kind: RunnerHTTP, URL: srv.URL + "/render", Models: []string{"mochi-1"}, Concurrency: 1,
				HealthInterval: 20 * time.Millisecond, UnhealthyAfter: 2, Where: "runners.yaml:2"}
			if tc.healthPath != "" {
				spec.HealthURL = srv.URL + tc.healthPath
			}
			f := newFakeCP(t)
			cfg := testConfig(t, f)
			cfg.RunnerSpecs = []RunnerSpec{spec}
			reg := prometheus.NewRegistry()
			cfg.Metrics = reg
			r := startAgent(t, cfg)
			up := func() float64 { return gaugeValue(t, reg, "vidfarm_agent_runner_up", RunnerHTTP, "server") }
			n := waitAdvertised(t, f, 0, "mochi-1", true)
			if up() != 1 {
				t.Error("vidfarm_agent_runner_up is 0 for a server that answers")
			}
			srv.Close()
			waitAdvertised(t, f, n, "mochi-1", false)
			if up() != 0 {
				t.Error("vidfarm_agent_runner_up is 1 for a server that is gone")
			}
			logs := r.logs.String()
			if !strings.Contains(logs, "its models stay advertised until it fails unhealthy_after checks in a row") ||
				!strings.Contains(logs, `msg="runner is not healthy: its models are withdrawn until it is" runner=server runner_kind=http models=[mochi-1] failed_checks=2`) {
				t.Errorf("no log of the first failed check, or of the withdrawal after the second:\n%s", logs)
			}
		})
	}
}

// A --runner MODEL=URL whose server goes away is withdrawn after
// unhealthy_after (the runners file's default) failed checks, as an http
// runner of the runners file is, and advertised again when it is back.
func TestFlagHTTPRunnerDownWithdrawsItsModel(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "no backend", http.StatusBadGateway) // a proxy whose model server is gone
			return
		}
		http.Error(w, "POST a render here", http.StatusMethodNotAllowed)
	}))
	t.Cleanup(srv.Close)
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Runners = map[string][]string{"mochi-1": {srv.URL + "/render"}}
	cfg.flagHealthInterval = 20 * time.Millisecond
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	r := startAgent(t, cfg)
	n := waitAdvertised(t, f, 0, "mochi-1", true)
	if gaugeValue(t, reg, "vidfarm_agent_runner_up", RunnerHTTP, "mochi-1") != 1 {
		t.Error("vidfarm_agent_runner_up is 0 for a server that answers")
	}
	down.Store(true)
	n = waitAdvertised(t, f, n, "mochi-1", false)
	logs := r.logs.String()
	want := fmt.Sprintf(`msg="runner is not healthy: its models are withdrawn until it is" runner=mochi-1 runner_kind=http models=[mochi-1] failed_checks=%d`,
		DefaultRunnerUnhealthyAfter)
	if !strings.Contains(logs, want) {
		t.Errorf("no log of the withdrawal after %d failed checks:\n%s", DefaultRunnerUnhealthyAfter, logs)
	}
	down.Store(false)
	waitAdvertised(t, f, n, "mochi-1", true)
}
