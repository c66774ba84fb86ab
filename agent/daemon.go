package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// ErrRegistrationRefused means the control plane refused to register the
// node (400, 401 or 403): a wrong agent token, or a capacity it does not
// accept. Retrying does not help, so Run stops with an error wrapping it.
var ErrRegistrationRefused = errors.New("agent: the control plane refused the registration")

// ErrNotAgentListener means the server the agent registers with answered
// 404 to POST /agent/v1/register in the control plane's own error format:
// it is a vidfarm listener, but not the agent listener (the public API's
// or the admin listener's address was given). Retrying cannot help, so
// Run stops with an error wrapping it.
var ErrNotAgentListener = errors.New("agent: wrong --server")

// Timing of the protocol.
const (
	// LeaseWaitSeconds is how long one lease request waits on the control
	// plane for work (the wait query parameter).
	LeaseWaitSeconds = 20
	// DefaultHeartbeatInterval is used when the control plane names none.
	DefaultHeartbeatInterval = 10 * time.Second
	// ProgressInterval is the shortest time between two progress reports
	// of one task.
	ProgressInterval = time.Second

	callTimeout     = 30 * time.Second // one small control-plane call
	blobTimeout     = 30 * time.Minute // one upload or download
	deregTimeout    = 15 * time.Second // the final deregister
	maxBackoff      = 30 * time.Second
	workDirRecheck  = 5 * time.Second
	leaseCallMargin = 30 * time.Second // lease call deadline beyond the server's wait

	// reportAttempts and blobAttempts are the fewest tries of a complete or
	// fail report and of a blob transfer on transient errors; past them
	// the agent goes on trying while the task's lease may still be valid
	// (task.retryWait), so a control plane that restarts or elects a
	// leader within the lease does not cost a finished render.
	reportAttempts = 10
	blobAttempts   = 3
	// fallbackLease is the lease's length when the control plane named
	// none and the assignment's deadline is already past by this
	// machine's clock.
	fallbackLease = 30 * time.Second
)

// Causes of a task's cancellation. Tasks cancelled for one of these report
// nothing: their lease is gone or is handed back by deregister.
var (
	errShutdown       = errors.New("agent stopping")
	errDrainTimeout   = fmt.Errorf("%w: drain timeout reached", errShutdown)
	errStopNow        = fmt.Errorf("%w: told to stop without waiting (a second signal)", errShutdown)
	errCredentialLost = errors.New("the control plane forgot this node's credential; its leases were handed back")
)

// Run is the node daemon: it registers with the control plane at
// cfg.Server, heartbeats, leases tasks with cfg.Workers workers, runs their
// pipeline stages, uploads their artifacts and reports them, until ctx is
// done. Then it drains: it asks for no more work, waits up to
// cfg.DrainTimeout for running tasks to finish and report, cancels the
// rest, deregisters (so the control plane hands those tasks to other nodes
// without counting a failure) and returns nil. It returns an error for a
// bad Config, for a work dir another agent holds (ErrWorkDirInUse), for a
// registration the control plane refuses (ErrRegistrationRefused) or a
// server that is not its agent listener (ErrNotAgentListener), and when
// the final deregister fails. cfg.StopNow ends the drain at once
// (NotifyStop: a second signal).
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	a, err := newAgent(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.unlock()
	return a.run(ctx)
}

// agent is one running daemon.
type agent struct {
	cfg      Config
	log      *slog.Logger
	cp       *cpClient
	inputs   *inputFetcher
	capacity wire.Capacity // as discovered; advertised() leaves out the models of runners that are down
	m        *metrics
	runners  []*liveRunner
	speaker  *pipeline.SpeechRouter // espeak-ng and the openai-speech runners' voices

	capChanged chan struct{} // a runner came up or went down
	idle       chan struct{} // the last running task ended

	regMu sync.Mutex // serialises (re)registration

	unlock func() // gives back the work dir's lock (prepareWorkDir)

	mu   sync.Mutex
	cred string // "" before registration and after a lost credential
	// lastCred is the credential of the agent's last registration, this
	// run's or, until its first, the one its last run kept in the work dir
	// (credentialFile): sent with every registration, it lets the agent
	// replace its own live node (wire.HeaderPreviousCredential).
	lastCred string
	gen      uint64 // registrations so far
	hbEvery  time.Duration
	leaseFor time.Duration // a lease's length from its grant or renewal (RegisterResponse.LeaseSeconds)
	// paused says why the workers lease nothing now (the work dir over its
	// limit); heartbeats carry it to the operator, as the node looks live
	// and idle to the control plane meanwhile.
	paused   string
	draining bool
	held     map[string]*task // leases held, by task id
	// registered is the capacity the control plane was last told, by a
	// registration or an update in place.
	registered wire.Capacity
	// leaseGate is closed while workers may lease; a capacity change
	// replaces it until it has registered again.
	leaseGate chan struct{}
	// nodeState is the maintenance state the last heartbeat answer gave
	// (maintenance.go).
	nodeState string

	sampling atomic.Bool   // a GPU telemetry sample is under way (telemetry.go)
	hbNow    chan struct{} // asks the heartbeat loop for a beat now
	fatal    chan error    // a reason to stop that is not ctx
	leaseCtx context.Context
	tasksCtx context.Context
}

func newAgent(ctx context.Context, cfg Config) (_ *agent, err error) {
	log := cfg.Logger
	// The work dir first: an agent refused for another's lock does nothing
	// else, and nothing of the other's is touched.
	unlock, err := prepareWorkDir(cfg.WorkDir, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	c, err := cfg.Discover()
	if err != nil {
		log.Warn("some of this machine's capacity could not be read", "err", err)
	}
	if cfg.Name == "" {
		cfg.Name = c.Hostname
	}
	if cfg.Name == "" {
		name, herr := os.Hostname()
		if herr == nil && name == "" {
			herr = errors.New("it is empty")
		}
		if herr != nil {
			return nil, fmt.Errorf("%w: --name is not given and the hostname cannot be read: %w", ErrConfig, herr)
		}
		cfg.Name = name
	}
	capacity := wireCapacity(c, cfg)
	runners, err := newLiveRunners(cfg.runners, capacity.GPUs, runnerDeps{client: cfg.RunnerHTTPClient, tools: cfg.Tools, log: log})
	if err != nil {
		return nil, err
	}
	speaker, err := newSpeaker(cfg.Tools, runners)
	if err != nil {
		return nil, err
	}
	voices, skipped, err := wireVoices(ctx, cfg.Tools, speaker.ServerVoices(), c)
	switch {
	case errors.Is(err, errNoEspeak):
		// the missing-tools warning below says so
	case err != nil:
		log.Warn("cannot list espeak-ng's voices: this node registers only its speech servers' voices", "err", err, "voices", len(voices))
	case skipped > 0:
		log.Warn("some voices are not registered (malformed, duplicate or beyond the limit)", "skipped", skipped, "voices", len(voices))
	}
	capacity.Voices = voices
	switch {
	case capacity.Virtual:
		log.Warn(fmt.Sprintf("no NVIDIA GPU: advertising %d procedural render slots on CPU; real models cannot run here", len(capacity.GPUs)),
			"virtual_gpus", len(capacity.GPUs), "why", c.Note)
	case len(capacity.GPUs) == 0:
		log.Warn("no NVIDIA GPU and no procedural render slots: this node takes CPU tasks only", "why", c.Note)
	}
	if cfg.Workers == 0 {
		cfg.Workers = cfg.CPUSlots + len(capacity.GPUs)
	}
	if cfg.AllowPrivateInputs {
		log.Warn("input images may be fetched from loopback, private and link-local addresses (AllowPrivateInputs): " +
			"a development switch, never for a farm that takes requests from others")
	}
	if len(cfg.runners) == 0 {
		log.Warn("no external runners: every model renders with the built-in procedural runner, which is not a video model")
	}
	for _, s := range cfg.runners {
		log.Info("external runner", "runner", s.Name, "runner_kind", s.Kind, "at", s.describe(), "models", s.Models,
			"concurrency", s.Concurrency, "from", s.Where)
	}
	var missing []string
	for _, t := range c.Tools {
		switch {
		case !t.Found:
			missing = append(missing, t.Name)
		case t.Problem != "":
			log.Warn("tool unusable: tasks that need it are not offered to this node", "tool", t.Name, "path", t.Path, "problem", t.Problem)
		}
	}
	if len(missing) > 0 {
		log.Warn("tools missing: tasks that need them are not offered to this node", "missing", missing)
	}
	lastCred, err := loadCredential(cfg.WorkDir)
	if err != nil {
		log.Warn("registering as a new node: the credential a former run kept cannot be read", "work_dir", cfg.WorkDir, "err", err)
	}
	cp, err := newCPClient(cfg)
	if err != nil {
		return nil, err
	}
	a := &agent{
		cfg:      cfg,
		log:      log,
		lastCred: lastCred,
		cp:       cp,
		unlock:   unlock,
		inputs:   newInputFetcher(cfg.AllowPrivateInputs, cfg.InputRootCAs),
		capacity: capacity,
		held:     map[string]*task{},
		runners:  runners,
		speaker:  speaker,

		capChanged: make(chan struct{}, 1),
		idle:       make(chan struct{}, 1),
		leaseGate:  openGate(),
		nodeState:  wire.NodeActive,
		hbNow:      make(chan struct{}, 1),
		fatal:      make(chan error, 1),
	}
	a.m = newMetrics(cfg.Metrics, a)
	return a, nil
}

func (a *agent) run(ctx context.Context) error {
	// life outlives ctx: heartbeats, running tasks and their reports go on
	// while the agent drains.
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	defer endLife()
	leaseCtx, stopLeasing := context.WithCancel(life)
	defer stopLeasing()
	tasksCtx, cancelTasks := context.WithCancelCause(life)
	defer cancelTasks(errShutdown)
	a.leaseCtx, a.tasksCtx = leaseCtx, tasksCtx

	// Register before anything else; give up when ctx ends first.
	regCtx, stopReg := context.WithCancel(leaseCtx)
	stopOnCtx := context.AfterFunc(ctx, stopReg)
	a.checkRunners(regCtx)
	err := a.registerLoop(regCtx)
	stopOnCtx()
	stopReg()
	if err != nil {
		if refused(err) {
			return err
		}
		a.log.Info("stopped before the control plane answered; nothing to hand back")
		return nil
	}

	var hbWG, workers sync.WaitGroup
	hbCtx, stopHeartbeats := context.WithCancel(life)
	defer stopHeartbeats()
	hbWG.Go(func() { a.heartbeats(hbCtx) })
	var watchers sync.WaitGroup
	a.watchRunners(leaseCtx, &watchers)
	for i := range a.cfg.Workers {
		workers.Go(func() { a.worker(i) })
	}
	a.log.Info("agent running", "workers", a.cfg.Workers, "work_dir", a.cfg.WorkDir)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-a.fatal:
		a.log.Error("agent stopping", "err", runErr)
	}

	// Drain: no new work, tell the control plane, let running tasks finish.
	a.mu.Lock()
	a.draining = true
	running := len(a.held)
	a.mu.Unlock()
	stopLeasing()
	watchers.Wait()
	a.beatNow()
	a.log.Info("draining: leasing no new work", "running_tasks", running, "drain_timeout", a.cfg.DrainTimeout.String())
	workersDone := make(chan struct{})
	go func() { workers.Wait(); close(workersDone) }()
	timer := time.NewTimer(a.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-workersDone:
	case <-a.cfg.StopNow:
		left := a.running()
		a.log.Warn("second signal: stopping without waiting for the running tasks; deregistering hands them to other nodes",
			"tasks", left)
		cancelTasks(errStopNow)
		<-workersDone
	case <-timer.C:
		left := a.running()
		a.log.Warn("drain timeout: cancelling the tasks still running; deregistering hands them to other nodes", "tasks", left)
		cancelTasks(errDrainTimeout)
		<-workersDone
	}
	stopHeartbeats()
	hbWG.Wait()

	cred, _ := a.session()
	if cred == "" {
		return runErr
	}
	dctx, cancel := context.WithTimeout(life, deregTimeout)
	defer cancel()
	if err := a.cp.deregister(dctx, cred); err != nil {
		a.log.Error("deregister failed: the control plane gives this node's leases to others only when they expire", "err", err)
		return errors.Join(runErr, fmt.Errorf("agent: deregister: %w", err))
	}
	a.log.Info("deregistered; agent stopped")
	return runErr
}

// running is the number of tasks the agent holds.
func (a *agent) running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}

// session returns the current credential and its registration number.
func (a *agent) session() (string, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cred, a.gen
}

// stop makes Run drain and return err.
func (a *agent) stop(err error) {
	select {
	case a.fatal <- err:
	default:
	}
}

// refused reports whether a registration failed for good: retrying
// cannot help, the agent stops.
func refused(err error) bool {
	return errors.Is(err, ErrRegistrationRefused) || errors.Is(err, ErrNotAgentListener)
}

// registerLoop registers, retrying with backoff until the control plane
// answers, ctx ends, or the registration is refused (refused): a 400, 401
// or 403, or a 404 from a vidfarm listener that is not the agent listener.
func (a *agent) registerLoop(ctx context.Context) error {
	b := a.backoff()
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		capacity := a.advertised()
		a.mu.Lock()
		prev := a.lastCred
		a.mu.Unlock()
		resp, err := a.cp.register(cctx, a.cfg.Token, prev, wire.RegisterRequest{Name: a.cfg.Name, Capacity: capacity})
		cancel()
		if err == nil {
			if err := saveCredential(a.cfg.WorkDir, resp.Credential); err != nil {
				a.log.Warn("cannot keep the node credential in the work dir: after a crash this agent may register again only once its node is down",
					"work_dir", a.cfg.WorkDir, "err", err)
			}
			every := time.Duration(resp.HeartbeatSeconds) * time.Second
			if every <= 0 {
				every = DefaultHeartbeatInterval
			}
			if a.cfg.HeartbeatInterval > 0 {
				every = a.cfg.HeartbeatInterval
			}
			a.mu.Lock()
			a.cred, a.lastCred, a.gen, a.hbEvery, a.registered = resp.Credential, resp.Credential, a.gen+1, every, capacity
			a.leaseFor = time.Duration(resp.LeaseSeconds) * time.Second
			a.mu.Unlock()
			a.log.Info("registered", "node_id", resp.NodeID, "name", a.cfg.Name, "gpus", len(a.capacity.GPUs),
				"virtual", a.capacity.Virtual, "cpu_slots", a.capacity.CPUSlots, "models", len(capacity.Models),
				"tools", a.capacity.Tools, "voices", len(capacity.Voices), "lease_seconds", resp.LeaseSeconds, "heartbeat_every", every.String())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *apiError
		if errors.As(err, &ae) && (ae.Status == 400 || ae.Status == 401 || ae.Status == 403) {
			return fmt.Errorf("%w: %w", ErrRegistrationRefused, err)
		}
		wait := b.next()
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			hint := fmt.Sprintf("%s is not the control plane's agent listener (its --agent-listen, default :8082): "+
				"point --server at that listener's root URL", ae.At)
			if ae.Code != "" {
				// The control plane's own error format: a vidfarm listener
				// without the agent API (the public API, the admin
				// listener). The address is wrong; retrying cannot fix it.
				return fmt.Errorf("%w: %s: %w", ErrNotAgentListener, hint, err)
			}
			// Some other server's 404 (a proxy or ingress whose route to the
			// control plane is not up yet may answer so): go on, loudly.
			a.log.Error("cannot register: "+hint+", or a proxy in front of it has no route to it yet; retrying",
				"attempt", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", err)
		} else {
			a.log.Warn("cannot register with the control plane; retrying", "server", a.cfg.Server, "attempt", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", err)
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// reregister replaces a credential the control plane answered 401 to. The
// leases of the old credential are gone (the control plane hands them back
// when the node registers again), so every running task is cancelled and
// reports nothing. gen is the registration the caller's credential came
// from: if another goroutine has registered since, there is nothing to do.
func (a *agent) reregister(gen uint64) {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	a.mu.Lock()
	if a.gen != gen || a.cred == "" {
		a.mu.Unlock()
		return
	}
	a.cred = ""
	draining := a.draining
	a.mu.Unlock()
	a.cancelAll(errCredentialLost)
	if draining {
		a.log.Warn("the control plane no longer knows this node (401) while draining: running tasks dropped")
		return
	}
	a.log.Warn("the control plane no longer knows this node (401): registering again; running tasks dropped")
	if err := a.registerLoop(a.leaseCtx); refused(err) {
		a.stop(err)
	}
}

// awaitRegistration waits for a registration in progress to end.
func (a *agent) awaitRegistration() {
	a.regMu.Lock()
	defer a.regMu.Unlock()
}

// unauthorized handles a 401 from a call made with registration gen.
func (a *agent) unauthorized(err error, gen uint64) bool {
	if !errors.Is(err, errUnauthorized) {
		return false
	}
	a.reregister(gen)
	return true
}

// cancelAll cancels every running task with cause.
func (a *agent) cancelAll(cause error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.held {
		t.cancel(cause)
	}
}

// setPaused records why the workers lease nothing ("" once they lease
// again) and sends a heartbeat at once when that changed.
func (a *agent) setPaused(reason string) {
	if len(reason) > wire.MaxPausedLen {
		// A long work dir path. The control plane refuses a heartbeat whose
		// reason is not UTF-8, so a rune the cut splits goes.
		reason = strings.ToValidUTF8(reason[:wire.MaxPausedLen], "")
	}
	a.mu.Lock()
	changed := a.paused != reason
	a.paused = reason
	a.mu.Unlock()
	if changed {
		a.beatNow()
	}
}

func (a *agent) beatNow() {
	select {
	case a.hbNow <- struct{}{}:
	default:
	}
}

func (a *agent) heartbeatEvery() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hbEvery
}

// heartbeats renews the held leases until ctx ends.
func (a *agent) heartbeats(ctx context.Context) {
	timer := time.NewTimer(a.heartbeatEvery())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-a.hbNow:
		}
		a.heartbeat(ctx)
		timer.Reset(a.heartbeatEvery())
	}
}

// heartbeat sends one heartbeat and cancels the tasks whose leases the
// control plane says are stale.
func (a *agent) heartbeat(ctx context.Context) {
	a.mu.Lock()
	cred, gen, draining := a.cred, a.gen, a.draining
	req := wire.HeartbeatRequest{Leases: []wire.LeaseReport{}, Draining: draining, Paused: a.paused}
	sent := make(map[string]uint64, len(a.held))
	for _, t := range a.held {
		req.Leases = append(req.Leases, wire.LeaseReport{TaskID: t.asg.TaskID, Token: t.asg.Token, Percent: t.percent()})
		sent[t.asg.TaskID] = t.asg.Token
	}
	a.mu.Unlock()
	if cred == "" {
		return // registering again
	}
	req.GPUs = a.gpuTelemetry()
	sentAt := time.Now() // the control plane renews from when it gets the beat, which is later
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	resp, err := a.cp.heartbeat(cctx, cred, req)
	cancel()
	if a.unauthorized(err, gen) {
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("heartbeat failed; leases expire unless a later one gets through", "leases", len(req.Leases), "err", err)
		}
		return
	}
	a.noteMaintenance(resp)
	a.renewed(sent, resp.Stale, sentAt)
	for _, id := range resp.Stale {
		a.mu.Lock()
		t := a.held[id]
		a.mu.Unlock()
		if t == nil || sent[id] != t.asg.Token {
			continue
		}
		if t.isFinished() {
			// Its own report may have ended the lease while the heartbeat
			// was on its way; cancelling the report now would call a
			// completion the control plane took "refused". The report gets
			// the control plane's own answer (409 stale_lease if the lease
			// really went), so let it finish.
			t.log.Debug("lease is stale (heartbeat) while its report is under way: the report's answer decides")
			continue
		}
		t.log.Warn("lease is stale (heartbeat): stopping the task and discarding its result")
		t.cancel(errStaleLease)
	}
}

// worker leases and runs one task at a time until the agent drains.
func (a *agent) worker(n int) {
	log := a.log.With("worker", n)
	b := a.backoff()
	full := false
	for a.leaseCtx.Err() == nil {
		if over, size := a.workDirFull(); over {
			if !full {
				log.Warn("work dir is over its limit: leasing no new work until it shrinks",
					"work_dir", a.cfg.WorkDir, "bytes", size, "max_bytes", a.cfg.WorkDirMaxBytes)
				full = true
				a.setPaused(fmt.Sprintf("work dir %s holds %d bytes, over --work-dir-max-bytes %d: leasing no new work until it shrinks",
					a.cfg.WorkDir, size, a.cfg.WorkDirMaxBytes))
			}
			sleep(a.leaseCtx, workDirRecheck)
			continue
		} else if full {
			log.Info("work dir is back under its limit: leasing again", "bytes", size, "max_bytes", a.cfg.WorkDirMaxBytes)
			full = false
			a.setPaused("")
		}
		if !a.waitLeasing() {
			return
		}
		cred, gen := a.session()
		if cred == "" { // another goroutine is registering again
			a.awaitRegistration()
			sleep(a.leaseCtx, a.cfg.RetryBackoff)
			continue
		}
		cctx, cancel := context.WithTimeout(a.leaseCtx, LeaseWaitSeconds*time.Second+leaseCallMargin)
		asg, err := a.cp.lease(cctx, cred, LeaseWaitSeconds)
		cancel()
		switch {
		case err != nil && a.leaseCtx.Err() != nil:
			return
		case a.unauthorized(err, gen):
			continue
		case err != nil:
			a.m.leaseFailed()
			wait := b.next()
			log.Warn("lease request failed; retrying", "retry_in", wait.Round(time.Millisecond).String(), "err", err)
			sleep(a.leaseCtx, wait)
			continue
		}
		b.reset()
		if asg != nil {
			a.runTask(*asg)
		}
	}
}

// backoff is an exponential backoff with jitter.
type backoff struct {
	first, cur time.Duration
}

func (a *agent) backoff() *backoff { return &backoff{first: a.cfg.RetryBackoff} }

func (b *backoff) reset() { b.cur = 0 }

// next returns the pause before the next try: between half and all of the
// current step, which doubles up to maxBackoff.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.first
	} else {
		b.cur = min(b.cur*2, maxBackoff)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
