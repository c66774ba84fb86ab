package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
)

// healthChecker is a runner whose server can say whether it takes work now
// (pipeline.CogRunner; later ComfyUI and OpenAI-compatible servers). The
// node advertises a runner's models only while its Health returns nil.
type healthChecker interface {
	Health(ctx context.Context) error
}

var _ healthChecker = (*pipeline.CogRunner)(nil)

// healthTimeout bounds one health check; the next one starts
// health_interval after it ends.
const healthTimeout = 10 * time.Second

// flagRunner is RunnerSpec.Where of a --runner spec.
const flagRunner = "--runner"

// mergeRunners joins the runners file's specs and the --runner ones
// (Config.Runners, kind command or http, no concurrency limit); a model
// given by both is an error. An http one gets the health check of the
// runners file's http kind with its defaults (health_interval,
// unhealthy_after): a model server that is down would otherwise stay
// advertised and fail every task sent to it. every is their
// health_interval (DefaultRunnerHealthInterval but in tests).
func mergeRunners(file []RunnerSpec, flags map[string][]string, every time.Duration) ([]RunnerSpec, error) {
	out := slices.Clone(file)
	byModel := map[string]RunnerSpec{}
	for _, s := range file {
		for _, m := range s.Models {
			byModel[m] = s
		}
	}
	models := make([]string, 0, len(flags))
	for m := range flags {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		if s, dup := byModel[m]; dup {
			return nil, fmt.Errorf("%w: model %q has a runner in the runners file (%q at %s) and one from --runner: give it one",
				ErrConfig, m, s.Name, s.Where)
		}
		spec := RunnerSpec{Name: m, Kind: RunnerCommand, Command: slices.Clone(flags[m]), Models: []string{m}, Where: flagRunner}
		if u, ok := runnerURL(flags[m]); ok {
			spec.Kind, spec.URL, spec.Command = RunnerHTTP, u, nil
			spec.HealthInterval, spec.UnhealthyAfter = every, DefaultRunnerUnhealthyAfter
		}
		out = append(out, spec)
	}
	return out, nil
}

// liveRunner is a configured runner while the agent runs: its health and
// its task slots.
type liveRunner struct {
	spec   RunnerSpec
	health healthChecker // nil: no health check (command): always up
	slots  chan struct{} // nil: no limit
	fits   bool          // a GPU of the node has spec.GPUMemoryGB
	// warm: a passing health check means the models are loaded (cog:
	// READY comes after setup); ComfyUI does not say what it has loaded.
	warm bool

	// The clients of the kinds that keep one for every task.
	comfy   *pipeline.ComfyUIRunner // comfyui
	planner *pipeline.ChatPlanner   // openai-chat
	speech  *pipeline.SpeechServer  // openai-speech

	mu    sync.Mutex
	up    bool
	err   error // the last failed health check
	fails int   // failed checks in a row
}

// newLiveRunners prepares specs for a node with gpus: runners with a
// health check start down until their first check passes. A ComfyUI
// workflow that cannot be read is an ErrConfig.
func newLiveRunners(specs []RunnerSpec, gpus []scheduler.GPU, deps runnerDeps) ([]*liveRunner, error) {
	out := make([]*liveRunner, 0, len(specs))
	for _, s := range specs {
		r := &liveRunner{spec: s, up: true, fits: s.GPUMemoryGB == 0}
		for _, g := range gpus {
			r.fits = r.fits || g.MemoryTotalGB >= s.GPUMemoryGB
		}
		if s.Concurrency > 0 {
			r.slots = make(chan struct{}, s.Concurrency)
		}
		if err := r.build(deps); err != nil {
			return nil, err
		}
		if r.health != nil {
			r.up = false
		}
		out = append(out, r)
	}
	return out, nil
}

// unplaceable is a model the node can never run: what one render of it
// needs at its least demanding resolution.
type unplaceable struct {
	model    string
	gpus     int // GPUs at once
	memoryGB int // on each
}

// neverPlaced lists the models (catalog ids) that no render of fits the
// node's gpus, idle, at any of their resolutions, as the scheduler counts:
// the catalog's GPU count (models.Requirements), each GPU with the
// resolution's memory free at registration, a MIG instance only for a
// one-GPU model. The node still advertises them (the control plane
// decides), but no task of theirs comes to it: a --runner for a 4-GPU
// model on a one-GPU node is a mistake worth a warning, as a runners
// file's gpu_memory_gb beyond every GPU is.
func neverPlaced(ids []string, gpus []scheduler.GPU) []unplaceable {
	var out []unplaceable
	for _, id := range ids {
		m, ok := models.Get(id)
		if !ok || len(m.Requirements.GPUMemoryGB) == 0 {
			continue
		}
		need := max(m.Requirements.GPUCount, 1)
		least := -1
		fits := false
		for _, memGB := range m.Requirements.GPUMemoryGB {
			if least < 0 || memGB < least {
				least = memGB
			}
			n := 0
			for _, g := range gpus {
				if g.MemoryFreeGB >= float64(memGB) && (!g.MIG || need <= 1) {
					n++
				}
			}
			fits = fits || n >= need
		}
		if !fits {
			out = append(out, unplaceable{model: id, gpus: need, memoryGB: least})
		}
	}
	return out
}

// isUp reports whether the runner's models may be advertised.
func (r *liveRunner) isUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up && r.fits
}

// check runs one health check and reports whether the runner's state
// changed, and the check's error.
func (r *liveRunner) check(ctx context.Context) (changed bool, fails int, err error) {
	cctx, cancel := context.WithTimeout(ctx, healthTimeout)
	err = r.health.Health(cctx)
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	if err == nil {
		changed, r.up, r.fails = !r.up, true, 0
		return changed, 0, nil
	}
	r.fails++
	if r.up && r.fails >= max(r.spec.UnhealthyAfter, 1) {
		changed, r.up = true, false
	}
	return changed, r.fails, err
}

// withdrawn lists the models of runners that are down or do not fit.
func withdrawn(runners []*liveRunner) map[string]bool {
	out := map[string]bool{}
	for _, r := range runners {
		if !r.isUp() {
			for _, m := range r.spec.Models {
				out[m] = true
			}
		}
	}
	return out
}

// predictionID is the Cog prediction id of a task attempt: the same for
// a repeated request of this lease, another for every new lease.
func predictionID(taskID string, token uint64) string {
	sum := sha256.Sum256([]byte(taskID + "/" + strconv.FormatUint(token, 10)))
	return pipeline.CogPredictionID(sum[:])
}

// pipelineRunner is the pipeline.Runner of r for the task j, with r's
// concurrency and timeout.
func (j *job) pipelineRunner(r *liveRunner, env, gpus []string) pipeline.Runner {
	a := j.a
	var inner pipeline.Runner
	switch r.spec.Kind {
	case RunnerCog:
		inner = &pipeline.CogRunner{URL: r.spec.URL, Client: a.cfg.RunnerHTTPClient, Inputs: r.spec.Inputs,
			ID: predictionID(j.asg.TaskID, j.asg.Token)}
	case RunnerComfyUI:
		inner = r.comfy
	case RunnerHTTP:
		inner = &pipeline.HTTPRunner{URL: r.spec.URL, Client: a.cfg.RunnerHTTPClient, GPUIDs: gpus}
	default:
		inner = &pipeline.ExternalRunner{Command: r.spec.Command, Dir: j.dir, Env: env, Exec: a.cfg.Tools.Exec, GPUIDs: gpus}
	}
	// Every configured runner's clip is checked, --runner ones too: an
	// unchecked short or misshapen clip would be delivered as completed
	// (duration rewritten, charge kept) or fail finalize without a re-render.
	g := &guardedRunner{inner: inner, slots: r.slots, timeout: r.spec.Timeout, name: r.spec.Name, check: a.cfg.Tools, log: j.t.log}
	if g.slots == nil && g.timeout == 0 && g.check == nil {
		return inner
	}
	return g
}

// guardedRunner holds one of its runner's slots while it renders, bounds
// the render by the runner's timeout, and holds the clip to the request
// (pipeline.Tools.CheckClip: trimmed or scaled down where that is honest,
// else the render fails saying why).
type guardedRunner struct {
	inner   pipeline.Runner
	slots   chan struct{}
	timeout time.Duration
	name    string
	check   *pipeline.Tools // nil: the clip is not checked
	log     *slog.Logger
}

func (l *guardedRunner) Render(ctx context.Context, req pipeline.RenderRequest, progress pipeline.ProgressFunc) error {
	ctx, release, err := hold(ctx, l.slots, l.timeout, l.name)
	if err != nil {
		return err
	}
	defer release()
	if l.check == nil {
		return l.inner.Render(ctx, req, progress)
	}
	// The check runs before the runner's 100 %, which it reports last.
	var done bool
	held := func(p int) {
		if p < 100 {
			progress(p)
		} else {
			done = true
		}
	}
	if progress == nil {
		held = nil
	}
	if err := l.inner.Render(ctx, req, held); err != nil {
		return err
	}
	c, err := l.check.CheckClip(ctx, req)
	if err != nil {
		return fmt.Errorf("runner %s: %w", l.name, err)
	}
	if c.Trimmed || c.Downscaled {
		l.log.Info("the runner's clip was longer or larger than asked: cut and scaled to the request", "runner", l.name,
			"trimmed", c.Trimmed, "downscaled", c.Downscaled, "width", c.Info.Width, "height", c.Info.Height,
			"duration_seconds", c.Info.Duration.Seconds())
	}
	if done {
		progress(100)
	}
	return nil
}

// hold takes one of slots (nil: no limit) and bounds ctx by timeout (0:
// none); release gives both back.
func hold(ctx context.Context, slots chan struct{}, timeout time.Duration, name string) (_ context.Context, release func(), err error) {
	if slots != nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx, nil, fmt.Errorf("runner %s: waiting for a free slot: %w", name, context.Cause(ctx))
		}
	}
	cancel := context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("runner %s: the task ran past its timeout of %s", name, timeout))
	}
	return ctx, func() {
		cancel()
		if slots != nil {
			<-slots
		}
	}, nil
}

// hold takes a slot of r for one task; see hold.
func (r *liveRunner) hold(ctx context.Context) (context.Context, func(), error) {
	return hold(ctx, r.slots, r.spec.Timeout, r.spec.Name)
}

// describe is a runner for logs.
func (s RunnerSpec) describe() string {
	switch {
	case s.URL != "":
		return s.Kind + " " + pipeline.RedactURL(s.URL)
	default:
		return s.Kind + " " + strings.Join(s.Command, " ")
	}
}
