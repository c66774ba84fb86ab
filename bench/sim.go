// The farm simulator (sim*.go): a discrete-event simulation that drives the
// real scheduler package with simulated time.
//
// What it models. A Fleet is groups of identical nodes (GPU kind, GPUs per
// node, GPU memory, CPU slots, models, cost per hour); each GPU kind has a
// speed factor relative to the reference H100 of the models catalog. A
// Workload is a Poisson arrival process (steady, or diurnal: a sinusoidal
// rate over 24 h, drawn by thinning; optional bursts multiply the rate for
// a window), a manual/auto split, a weighted manual mix (model, resolution,
// durations), auto videos (durations, scene model and resolution; a video
// of d seconds gets ceil(d/scene_seconds) scenes, added with AddScenes when
// its plan completes), account classes with a share of the videos, an
// account count, a priority and optional SLOs. Every node is registered
// with UpsertNode; videos are submitted as ManualGraph / AutoGraph with GPU
// requirements from the catalog (GPUCount, GPUMemoryGB of the resolution).
// A source goroutine draws the arrivals ahead and prepares their records
// (PrepareSubmit, PrepareScenes: sim_source.go); the simulating goroutine
// enters them (SubmitPrepared, AddPreparedScenes). Whenever a video
// arrives or a task ends, PlaceGrant is called on the nodes that could
// take the new work (sim_place.go) until they answer ErrNoWork, and
// CompleteGrant is called when a task's service time is over; finished
// videos are forgotten. Events wait in a radix heap (sim_queue.go).
//
// Service times. A render of d seconds holds its GPUCount GPUs for
// GPUSecondsPerOutputSecond[res] * d / GPUCount / speed seconds; a scene
// renders scene_seconds of output the same way. CPU tasks take the
// constants below (plan 3 s; tts 1 s + 0.1 s per output second; finalize
// 2 s + 0.2 s/s; composite 5 s + 0.5 s/s). With ExponentialService each
// time is drawn from an exponential distribution with that mean, which
// turns a one-class workload into an M/M/c queue (a test checks the mean
// wait against Erlang C within 5%).
//
// What it reports (SimReport): waits (submission to first lease, GPU task
// ready to lease) and turnaround as mean/p50/p95/p99/max overall, per mode
// and per account class, SLO attainment, GPU and CPU-slot utilisation,
// throughput, videos per GPU-hour, cost and cost per rendered minute, and a
// timeline of GPU-wait percentiles and utilisation; as a table (String),
// JSON, CSV (sim_output.go) or an SVG chart (sim_chart.go). Sweep
// (sim_sweep.go) varies one node group's size to find the smallest fleet
// that meets a p95 target, or every account class's SLOs; Optimize
// (sim_optimize.go) searches the counts of every group for the cheapest
// fleet that meets every class's SLOs. The same inputs and seed give the same report.
// SimConfig.Replications runs several seeds in parallel and reports each
// figure's mean and 95% confidence interval (sim_repl.go); the sweep then
// says which sizes are certain to meet the target.
//
// Faults and warm-up (sim_faults.go), optional per node group: node
// failures and agent restarts take a node down (RemoveNode requeues its
// tasks) for a repair or restart time, then it registers again; with
// model_load a GPU task pays its model's load time on a node where the
// model is not warm, and nodes report their warm models (at most
// warm_slots, least recently used evicted) with UpsertNode, which the
// scheduler's warm-model preference reads.
//
// Not modelled yet: lease expiry (leases never expire; a node that goes
// down is noticed at once), draining, blob transfers, CPU work on GPU
// nodes competing with the agent.
package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
)

// SimConfig sets the length and the randomness of a simulation.
type SimConfig struct {
	// Hours of simulated time. Videos arrive during the whole run; work
	// still queued or running at the end is reported as in flight.
	Hours float64 `json:"hours"`
	// Seed of the PCG generators behind arrivals and mixes (one) and,
	// with Workload.ExponentialService, service times (another).
	Seed uint64 `json:"seed"`
	// WarmupHours: videos submitted before this point run but are left out
	// of the wait statistics (the farm starts empty). Zero keeps them all.
	WarmupHours float64 `json:"warmup_hours,omitempty"`
	// Replications is how many independent runs to average (seeds Seed,
	// Seed+1, …), run in parallel; 0 or 1 is one run. With more, every
	// figure of the report is the mean over the runs and SimReport.CI
	// holds its 95% confidence interval (sim_repl.go).
	Replications int `json:"replications,omitempty"`
	// Parallel caps the replications run at once; 0 means GOMAXPROCS.
	Parallel int `json:"-"`
	// Progress, when set, is called about every 1% of the simulated time
	// with the simulated time so far and the total, summed over the
	// replications (from any goroutine, one call at a time).
	Progress func(done, total time.Duration) `json:"-"`
	// NoWarmPreference turns off the scheduler's warm-model preference
	// (Config.WarmWindow 0), to measure what it saves in cold starts.
	NoWarmPreference bool `json:"no_warm_preference,omitempty"`
}

// CPU task service times (seconds on one CPU slot; d is the video's
// duration in seconds). These are rough figures for the procedural
// pipeline, not measurements.
const (
	planSeconds                = 3.0 // script and scene list from the prompt
	ttsBaseSeconds             = 1.0 // espeak-ng: base ...
	ttsPerSecond               = 0.1 // ... plus per output second
	finalizeBaseSeconds        = 2.0 // ffmpeg encode/mux + poster
	finalizePerSecond          = 0.2
	compositeBaseSeconds       = 5.0 // avatar, brand kit, scenes, voice, captions
	compositePerSecond         = 0.5
	simLease                   = 30 * 24 * time.Hour // leases never expire in the simulation
	maxSimHours                = 24 * 365
	maxSimEvents               = 50_000_000
	simEpochUnix         int64 = 1767225600 // 2026-01-01T00:00:00Z
)

// ErrSimTooLarge is returned when a simulation would process more events
// than the simulator allows (an overloaded farm whose queue only grows).
var ErrSimTooLarge = errors.New("bench: simulation too large")

type eventKind uint8

const (
	evArrival eventKind = iota
	evDone
	evFail    // a node fails (sim_faults.go)
	evRestart // a node's agent restarts
	evUp      // a node is back
)

// event is 24 bytes: the queue moves each event a few times (sim_queue.go),
// so the rare node events carry their node in a simTask record instead of
// widening every event.
type event struct {
	at  time.Duration // since the start
	seq uint64        // the push's number << 8 | the kind: ties pop first pushed first
	// task is, for evDone, the task that ends; for evFail, evRestart and
	// evUp, a record of the node and its epoch when the event was pushed.
	task *simTask
}

func (e event) kind() eventKind { return eventKind(e.seq) }

type simNode struct {
	id      string
	idx     int // in sim.nodes
	ref     scheduler.NodeRef
	group   int
	speed   float64
	gpus    int
	cpu     int
	freeGPU int
	freeCPU int
	// gpuNo and cpuNo are sim.gpuGen and sim.cpuGen when the node last
	// answered ErrNoWork; zero once its capacity grew since.
	gpuNo, cpuNo uint64
	// Faults and warm-up (sim_faults.go): spec is what it registers with;
	// down since downSince; epoch counts its downs, so that events drawn
	// before one are known stale; warm are its warm models, least recently
	// used first.
	spec scheduler.Node
	// scale multiplies the GPU tasks' modelled times, by model
	// (Fleet.TimeScale); nil when the fleet sets none for its GPU kind.
	scale     map[string]float64
	down      bool
	downSince time.Duration
	epoch     uint32
	warm      []warmModel
}

type simVideo struct {
	mode       scheduler.Mode
	model      string // of its GPU tasks
	class      int
	seconds    int
	submitted  time.Duration
	leased     bool // a first lease was granted
	counted    bool // submitted after the warm-up
	scenes     int
	resolution string // of its GPU tasks
	// gpuSeconds is how long each of its GPU tasks (the render, or one
	// scene) runs on a GPU of speed 1: the catalog's GPU-seconds, summed
	// over the task's GPUs, split among them.
	gpuSeconds  float64
	scenesAt    time.Duration // when AddScenes made its scenes ready
	gpuLeased   int           // GPU tasks leased so far
	scenesReady bool          // AddScenes ran
	// prepScenes are an auto video's scenes, built by the source, added
	// when its plan is done.
	prepScenes *scheduler.PreparedScenes
}

// simTask is a leased task, in sim.running at index idx until it ends.
type simTask struct {
	grant scheduler.Grant
	v     *simVideo
	// class is v.class, read when the task ends without a visit to v, which
	// most tasks' ends do not otherwise make.
	class   int
	idx     int
	node    *simNode
	gpus    int
	cpu     int
	started time.Duration
	end     time.Duration
	lost    bool // its node went down: its evDone is void
	// epoch is, in a node event's record, node.epoch when it was pushed.
	epoch uint32
}

// sim is one run's mutable state.
type sim struct {
	fleet   Fleet
	wl      Workload
	cfg     SimConfig
	svc     *rand.Rand // service times (Workload.ExponentialService)
	st      *scheduler.State
	events  eventQueue
	seq     uint64
	now     time.Duration
	horizon time.Duration
	warmup  time.Duration
	nodes   []*simNode
	// gpuRoom and cpuRoom are bit sets of the nodes (by index) with a free
	// GPU and with a free CPU slot (placeAll).
	gpuRoom, cpuRoom []uint64
	byID             map[string]*simNode
	// videos are the unfinished ones by number, which is also the
	// scheduler's Grant.VideoSeq: both number the videos from 1 in
	// arrival order, the order of submission.
	videos  videoTable
	running []*simTask // in no particular order (see simTask.idx)
	spare   []*simTask // ended, for reuse (newTask)
	// accts are the accounts' scheduler handles by class and index.
	accts [][]scheduler.AccountRef
	// arrivals are the source's batches (sim_source.go); batch is the one
	// being read and next the arrival whose event is queued.
	arrivals <-chan []arrival
	srcErr   <-chan error
	batch    []arrival
	next     arrival
	rec      *recorder
	eventsN  int
	// readyGPU and readyCPU count the ready GPU and CPU tasks; gpuGen and
	// cpuGen grow whenever tasks of that kind become ready (sim_place.go).
	readyGPU, readyCPU int
	gpuGen, cpuGen     uint64
	// Faults and warm-up (sim_faults.go): each group's settings, the
	// generator of failure and repair times, and what they cost.
	gfaults []groupFaults
	fltRand *rand.Rand
	flt     faultRec
	// atD and atT: the last time at made (sim.at).
	atD time.Duration
	atT time.Time
}

// Simulate runs the workload on the fleet for cfg.Hours of simulated time
// through the real scheduler and reports what clients and operators would
// see, averaged over cfg.Replications runs. The same inputs give the same
// report, however many run at once.
func Simulate(fleet Fleet, wl Workload, cfg SimConfig) (SimReport, error) {
	if cfg.Replications < 0 || cfg.Replications > maxReplications {
		return SimReport{}, fieldErr("replications", "must be 1 to %d, got %d", maxReplications, cfg.Replications)
	}
	if err := checkInputs(fleet, wl); err != nil {
		return SimReport{}, err
	}
	if cfg.Replications > 1 {
		return replicate(fleet, wl, cfg)
	}
	return simulateOnce(fleet, wl, cfg)
}

// simulateOnce is one run with cfg.Seed.
func simulateOnce(fleet Fleet, wl Workload, cfg SimConfig) (SimReport, error) {
	if err := fleet.Validate(); err != nil {
		return SimReport{}, err
	}
	if err := wl.Validate(); err != nil {
		return SimReport{}, err
	}
	if !finite(cfg.Hours) || cfg.Hours <= 0 || cfg.Hours > maxSimHours {
		return SimReport{}, fieldErr("hours", "must be > 0 and <= %d, got %v", maxSimHours, cfg.Hours)
	}
	if !finite(cfg.WarmupHours) || cfg.WarmupHours < 0 || cfg.WarmupHours >= cfg.Hours {
		return SimReport{}, fieldErr("warmup_hours", "must be >= 0 and below hours, got %v", cfg.WarmupHours)
	}
	if _, err := checkVideos(wl, cfg.Hours); err != nil {
		return SimReport{}, err
	}
	scfg := scheduler.DefaultConfig()
	if cfg.NoWarmPreference {
		scfg.WarmWindow = 0
	}
	st, err := scheduler.New(scfg)
	if err != nil {
		return SimReport{}, err
	}
	s := &sim{
		fleet: fleet, wl: wl, cfg: cfg, st: st,
		svc:     rand.New(rand.NewPCG(cfg.Seed^0x6a09e667f3bcc909, cfg.Seed)),
		horizon: hoursDur(cfg.Hours),
		warmup:  hoursDur(cfg.WarmupHours),
		byID:    map[string]*simNode{},
		gpuGen:  1,
		cpuGen:  1,
	}
	s.accts = make([][]scheduler.AccountRef, len(wl.Accounts))
	s.rec = newRecorder(wl, s.horizon)
	if err := s.addNodes(); err != nil {
		return SimReport{}, err
	}
	s.setupFaults()
	arrivals, errc, stop := make(chan []arrival, arrivalBatches), make(chan error, 1), make(chan struct{})
	defer close(stop)
	go newSource(wl, cfg).run(arrivals, errc, stop)
	s.arrivals, s.srcErr = arrivals, errc
	if err := s.queueArrival(); err != nil {
		return SimReport{}, err
	}
	step := max(s.horizon/100, time.Nanosecond)
	nextProgress := step
	for s.events.len() > 0 {
		e := s.events.pop()
		if e.at > s.horizon {
			break
		}
		s.now = e.at
		if cfg.Progress != nil && s.now >= nextProgress {
			cfg.Progress(s.now, s.horizon)
			nextProgress = (s.now/step + 1) * step
		}
		if s.eventsN++; s.eventsN > maxSimEvents {
			return SimReport{}, fmt.Errorf("%w: more than %d events; shorten hours or lower the rate", ErrSimTooLarge, maxSimEvents)
		}
		var err error
		switch e.kind() {
		case evArrival:
			if err = s.arrive(); err == nil && s.videos.len() > maxSimWaiting {
				err = errTooManyWaiting(s.videos.len(), s.now.Hours(), cfg.Hours)
			}
		case evDone:
			err = s.complete(e.task)
		case evFail, evRestart:
			err = s.down(e)
		case evUp:
			err = s.up(e)
		}
		if err != nil {
			return SimReport{}, err
		}
		s.rec.queued(s.now, s.readyGPU)
	}
	if cfg.Progress != nil {
		cfg.Progress(s.horizon, s.horizon)
	}
	if inFlight := s.rec.submittedAll - s.rec.completedAll; s.videos.len() != inFlight {
		return SimReport{}, fmt.Errorf("bench: %d videos unfinished, but %d submitted and %d completed", s.videos.len(), s.rec.submittedAll, s.rec.completedAll)
	}
	return s.report(), nil
}

// maxSimTime is the latest time an event may be at: far past the longest
// horizon (maxSimHours), and a quarter of int64's range, so that a sum of
// two times (later) never wraps. A time beyond it is as good as never: the
// run ends first. Without the cap a slow task (a GPU at speed 0.001 with a
// time scale of 10,000) wrapped to a negative time and the event queue
// panicked.
const maxSimTime = time.Duration(1 << 61)

// durOf is ns nanoseconds as a Duration, saturating at maxSimTime (a
// float64 past int64's range converts to an unspecified value, negative on
// amd64).
func durOf(ns float64) time.Duration {
	switch {
	case !(ns < float64(maxSimTime)): // NaN included
		return maxSimTime
	case ns <= 0:
		return 0
	}
	return time.Duration(ns)
}

// later is t+d, saturating at maxSimTime; t and d are at least 0.
func later(t, d time.Duration) time.Duration {
	if d >= maxSimTime-t {
		return maxSimTime
	}
	return t + d
}

func hoursDur(h float64) time.Duration { return durOf(h * float64(time.Hour)) }

func secondsDur(sec float64) time.Duration { return durOf(sec * float64(time.Second)) }

// at is the wall-clock time d after the start, as the scheduler takes it.
// The time of the last call is kept: a busy event makes several calls at
// the same time (complete, add scenes, place on each node with room).
func (s *sim) at(d time.Duration) time.Time {
	if d != s.atD || s.atT.IsZero() {
		s.atD, s.atT = d, time.Unix(simEpochUnix, 0).UTC().Add(d)
	}
	return s.atT
}

func (s *sim) push(at time.Duration, kind eventKind, t *simTask) {
	s.seq++
	s.events.push(event{at: at, seq: s.seq<<8 | uint64(kind), task: t})
}

// pushNode queues a node event for n as it is now.
func (s *sim) pushNode(at time.Duration, kind eventKind, n *simNode) {
	t := s.newTask()
	t.node, t.epoch = n, n.epoch
	s.push(at, kind, t)
}
