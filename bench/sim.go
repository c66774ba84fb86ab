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
// its plan completes), and account classes with a share of the videos, an
// account count and a priority. Every node is registered with UpsertNode;
// videos are submitted as ManualGraph / AutoGraph with GPU requirements
// from the catalog (GPUCount, GPUMemoryGB of the resolution). Whenever a
// video arrives or a task ends, Place is called on every node with a free
// GPU or CPU slot until it answers ErrNoWork, and Complete is called when a
// task's service time is over; finished videos are forgotten.
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
// ready to lease) and turnaround as mean/p50/p95/p99/max per mode and per
// account class, GPU and CPU-slot utilisation, throughput, videos per
// GPU-hour, cost and cost per rendered minute; as a table (String) or JSON.
// The same inputs and seed give the same report.
//
// Not modelled yet: failures, lease expiry and node churn (leases never
// expire; nodes never go down or drain), warm-model preference (nodes
// report no warm models), model load times, blob transfers, CPU work on GPU
// nodes competing with the agent; no parameter sweep ("how many GPUs for
// this wait target"), SLO attainment, CSV or SVG output yet.
package bench

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// SimConfig sets the length and the randomness of a simulation.
type SimConfig struct {
	// Hours of simulated time. Videos arrive during the whole run; work
	// still queued or running at the end is reported as in flight.
	Hours float64 `json:"hours"`
	// Seed of the PCG generator behind arrivals, mixes and (with
	// Workload.ExponentialService) service times.
	Seed uint64 `json:"seed"`
	// WarmupHours: videos submitted before this point run but are left out
	// of the wait statistics (the farm starts empty). Zero keeps them all.
	WarmupHours float64 `json:"warmup_hours,omitempty"`
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
)

type event struct {
	at   time.Duration // since the start
	seq  uint64        // ties: first scheduled first
	kind eventKind
	ref  scheduler.LeaseRef
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type simNode struct {
	id      string
	group   int
	speed   float64
	gpus    int
	cpu     int
	freeGPU int
	freeCPU int
}

type simVideo struct {
	mode       scheduler.Mode
	class      int
	seconds    int
	submitted  time.Duration
	leased     bool // a first lease was granted
	counted    bool // submitted after the warm-up
	scenes     int
	resolution string        // of its GPU tasks
	scenesAt   time.Duration // when AddScenes made its scenes ready
}

type simTask struct {
	video   string
	node    *simNode
	gpus    int
	cpu     int
	started time.Duration
	end     time.Duration
}

// sim is one run's mutable state.
type sim struct {
	fleet    Fleet
	wl       Workload
	cfg      SimConfig
	rng      *rand.Rand
	st       *scheduler.State
	events   eventHeap
	seq      uint64
	now      time.Duration
	horizon  time.Duration
	warmup   time.Duration
	nodes    []*simNode
	byID     map[string]*simNode
	videos   map[string]*simVideo
	running  map[string]*simTask // by task id
	nextID   uint64
	manualW  []float64
	classW   []float64
	maxRate  float64
	rec      *recorder
	eventsN  int
	sceneSec int
	// catalog holds the models the workload uses, read once: models.Get copies.
	catalog map[string]models.Model
}

// Simulate runs the workload on the fleet for cfg.Hours of simulated time
// through the real scheduler and reports what clients and operators would
// see. The same inputs give the same report.
func Simulate(fleet Fleet, wl Workload, cfg SimConfig) (SimReport, error) {
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
	st, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		return SimReport{}, err
	}
	s := &sim{
		fleet: fleet, wl: wl, cfg: cfg, st: st,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		horizon:  hoursDur(cfg.Hours),
		warmup:   hoursDur(cfg.WarmupHours),
		byID:     map[string]*simNode{},
		videos:   map[string]*simVideo{},
		running:  map[string]*simTask{},
		sceneSec: defaultSceneSeconds,
	}
	if wl.Auto != nil && wl.Auto.SceneSeconds > 0 {
		s.sceneSec = wl.Auto.SceneSeconds
	}
	s.catalog = map[string]models.Model{}
	for _, mix := range wl.Manual {
		s.catalog[mix.Model], _ = models.Get(mix.Model) // validated: it exists
	}
	if wl.Auto != nil {
		s.catalog[wl.Auto.SceneModel], _ = models.Get(wl.Auto.SceneModel)
	}
	for _, m := range wl.Manual {
		s.manualW = append(s.manualW, m.Weight)
	}
	for _, c := range wl.Accounts {
		s.classW = append(s.classW, c.Share)
	}
	s.rec = newRecorder(wl)
	if err := s.addNodes(); err != nil {
		return SimReport{}, err
	}
	s.maxRate = s.peakRate()
	s.scheduleArrival(0)
	for len(s.events) > 0 {
		e := heap.Pop(&s.events).(event)
		if e.at > s.horizon {
			break
		}
		s.now = e.at
		if s.eventsN++; s.eventsN > maxSimEvents {
			return SimReport{}, fmt.Errorf("%w: more than %d events; shorten hours or lower the rate", ErrSimTooLarge, maxSimEvents)
		}
		var err error
		switch e.kind {
		case evArrival:
			err = s.arrive()
		case evDone:
			err = s.complete(e.ref)
		}
		if err != nil {
			return SimReport{}, err
		}
	}
	return s.report(), nil
}

func hoursDur(h float64) time.Duration { return time.Duration(h * float64(time.Hour)) }

func secondsDur(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }

func (s *sim) at(d time.Duration) time.Time {
	return time.Unix(simEpochUnix, 0).UTC().Add(d)
}

func (s *sim) push(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

func (s *sim) addNodes() error {
	for gi, g := range s.fleet.Groups {
		speed, _ := s.fleet.speed(g.GPUModel)
		mods := g.Models
		if len(mods) == 0 {
			mods = models.IDs()
		}
		for i := 1; i <= g.Count; i++ {
			n := scheduler.Node{
				ID:       fmt.Sprintf("%s-%04d", g.Name, i),
				CPUSlots: g.CPUSlots,
				Tools:    nodeTools(),
				Models:   mods,
			}
			for k := 0; k < g.GPUsPerNode; k++ {
				n.GPUs = append(n.GPUs, scheduler.GPU{ID: fmt.Sprintf("gpu%d", k), MemoryTotalGB: g.GPUMemoryGB, MemoryFreeGB: g.GPUMemoryGB})
			}
			if err := s.st.UpsertNode(n, s.at(0)); err != nil {
				return fmt.Errorf("bench: register node %s: %w", n.ID, err)
			}
			sn := &simNode{id: n.ID, group: gi, speed: speed, gpus: g.GPUsPerNode, cpu: g.CPUSlots, freeGPU: g.GPUsPerNode, freeCPU: g.CPUSlots}
			s.nodes = append(s.nodes, sn)
			s.byID[sn.id] = sn
		}
	}
	return nil
}

// rate is the arrival rate (per hour) at simulated time t.
func (s *sim) rate(t time.Duration) float64 {
	a := s.wl.Arrival
	r := a.RatePerHour
	h := t.Hours()
	if a.Process == "diurnal" {
		r *= 1 + a.Amplitude*math.Cos(2*math.Pi*(math.Mod(h, 24)-a.PeakHour)/24)
	}
	for _, b := range a.Bursts {
		if h >= b.StartHour && h < b.StartHour+b.Minutes/60 {
			r *= b.Multiplier
		}
	}
	return r
}

// peakRate bounds rate over the whole run, for thinning.
func (s *sim) peakRate() float64 {
	a := s.wl.Arrival
	r := a.RatePerHour * (1 + a.Amplitude)
	for _, b := range a.Bursts {
		if b.Multiplier > 1 {
			r *= b.Multiplier
		}
	}
	return r
}

// scheduleArrival draws the next arrival after from: a Poisson process of
// rate maxRate, each point kept with probability rate(t)/maxRate
// (Lewis-Shedler thinning).
func (s *sim) scheduleArrival(from time.Duration) {
	t := from
	for {
		t += hoursDur(s.rng.ExpFloat64() / s.maxRate)
		if t > s.horizon {
			return
		}
		if s.rng.Float64()*s.maxRate < s.rate(t) {
			s.push(event{at: t, kind: evArrival})
			return
		}
	}
}

func pickWeighted(r *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	u := r.Float64() * total
	for i, x := range w {
		if u < x {
			return i
		}
		u -= x
	}
	return len(w) - 1
}

// serviceSeconds applies the exponential option to a mean service time.
func (s *sim) serviceSeconds(mean float64) float64 {
	if s.wl.ExponentialService {
		return mean * s.rng.ExpFloat64()
	}
	return mean
}

// gpuReq is what one render of m at res needs from the scheduler.
// nodeTools are the tools every simulated node has: those the scheduler's CPU
// stages need, so a new tool there cannot leave simulated tasks unplaceable.
func nodeTools() []string {
	var out []string
	for _, r := range []scheduler.Requirements{scheduler.DefaultPlanReq(), scheduler.DefaultTTSReq(),
		scheduler.DefaultFinalizeReq(), scheduler.DefaultCompositeReq()} {
		for _, t := range r.Tools {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func gpuReq(m models.Model, res string) scheduler.Requirements {
	return scheduler.Requirements{
		GPUs:        m.Requirements.GPUCount,
		GPUMemoryGB: float64(m.Requirements.GPUMemoryGB[res]),
		Model:       m.ID,
	}
}

func (s *sim) arrive() error {
	s.scheduleArrival(s.now)
	class := pickWeighted(s.rng, s.classW)
	ac := s.wl.Accounts[class]
	acct := fmt.Sprintf("%s-%d", ac.Name, s.rng.IntN(ac.Count)+1)
	s.nextID++
	id := fmt.Sprintf("v%08d", s.nextID)
	info := scheduler.VideoInfo{ID: id, AccountID: acct, Priority: ac.Priority}
	v := &simVideo{class: class, submitted: s.now, counted: s.now >= s.warmup}
	var g scheduler.Graph
	if s.rng.Float64() < s.wl.ManualShare {
		mix := s.wl.Manual[pickWeighted(s.rng, s.manualW)]
		m := s.catalog[mix.Model]
		v.mode = scheduler.ModeManual
		v.seconds = mix.Durations[s.rng.IntN(len(mix.Durations))]
		v.resolution = mix.Resolution
		g = scheduler.ManualGraph(info, gpuReq(m, mix.Resolution))
	} else {
		v.mode = scheduler.ModeAuto
		v.seconds = s.wl.Auto.Durations[s.rng.IntN(len(s.wl.Auto.Durations))]
		v.scenes = (v.seconds + s.sceneSec - 1) / s.sceneSec
		v.resolution = s.wl.Auto.SceneResolution
		g = scheduler.AutoGraph(info)
	}
	if err := s.st.Submit(g, s.at(s.now)); err != nil {
		return fmt.Errorf("bench: submit %s: %w", id, err)
	}
	s.videos[id] = v
	s.rec.submitted(v)
	return s.placeAll()
}

// placeAll offers work to every node with a free GPU or CPU slot.
func (s *sim) placeAll() error {
	for _, n := range s.nodes {
		if s.st.ReadyTasks() == 0 {
			return nil
		}
		if err := s.placeOn(n); err != nil {
			return err
		}
	}
	return nil
}

// placeOn calls Place for n until it answers ErrNoWork, starting each task
// it gets.
func (s *sim) placeOn(n *simNode) error {
	for (n.freeGPU > 0 || n.freeCPU > 0) && s.st.ReadyTasks() > 0 {
		l, err := s.st.Place(n.id, s.at(s.now), simLease)
		if errors.Is(err, scheduler.ErrNoWork) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("bench: place on %s: %w", n.id, err)
		}
		s.start(n, l)
	}
	return nil
}

func (s *sim) start(n *simNode, l scheduler.Lease) {
	v := s.videos[l.VideoID]
	sec := s.serviceSeconds(s.taskSeconds(n, v, l))
	t := &simTask{video: l.VideoID, node: n, gpus: l.Req.GPUs, cpu: l.Req.CPUSlots, started: s.now, end: s.now + secondsDur(sec)}
	n.freeGPU -= t.gpus
	n.freeCPU -= t.cpu
	s.running[l.TaskID] = t
	if !v.leased {
		v.leased = true
		s.rec.firstLease(v, s.now-v.submitted)
	}
	if l.Req.GPUs > 0 {
		ready := v.submitted
		if l.Kind == scheduler.KindScene {
			ready = v.scenesAt
		}
		s.rec.gpuLease(v, s.now-ready)
	}
	s.push(event{at: t.end, kind: evDone, ref: l.Ref()})
}

// taskSeconds is the mean service time of a lease's task on node n.
func (s *sim) taskSeconds(n *simNode, v *simVideo, l scheduler.Lease) float64 {
	d := float64(v.seconds)
	switch l.Kind {
	case scheduler.KindRender, scheduler.KindScene:
		m := s.catalog[l.Req.Model]
		out := v.seconds
		if l.Kind == scheduler.KindScene {
			out = s.sceneSec
		}
		// GPU-seconds are summed over the render's GPUs; wall time splits them.
		return m.GPUSeconds(v.resolution, out) / float64(max(m.Requirements.GPUCount, 1)) / n.speed
	case scheduler.KindFinalize:
		return finalizeBaseSeconds + finalizePerSecond*d
	case scheduler.KindPlan:
		return planSeconds
	case scheduler.KindTTS:
		return ttsBaseSeconds + ttsPerSecond*d
	case scheduler.KindComposite:
		return compositeBaseSeconds + compositePerSecond*d
	}
	return 0
}

// complete ends a task whose service time is over, adds an auto video's
// scenes once its plan is done, and offers the freed capacity.
func (s *sim) complete(ref scheduler.LeaseRef) error {
	t := s.running[ref.TaskID]
	delete(s.running, ref.TaskID)
	n := t.node
	n.freeGPU += t.gpus
	n.freeCPU += t.cpu
	s.rec.busy(t, s.horizon)
	out, err := s.st.Complete(ref, s.at(s.now))
	if err != nil {
		return fmt.Errorf("bench: complete %s: %w", ref.TaskID, err)
	}
	v := s.videos[t.video]
	if out.NeedsScenes {
		m := s.catalog[s.wl.Auto.SceneModel]
		if err := s.st.AddScenes(t.video, v.scenes, gpuReq(m, v.resolution), s.at(s.now)); err != nil {
			return fmt.Errorf("bench: add scenes to %s: %w", t.video, err)
		}
		v.scenesAt = s.now
	}
	if out.VideoCompleted {
		s.rec.completed(v, s.now-v.submitted)
		delete(s.videos, t.video)
		if err := s.st.Forget(t.video); err != nil {
			return fmt.Errorf("bench: forget %s: %w", t.video, err)
		}
	}
	if out.VideoFailed {
		return fmt.Errorf("bench: video %s failed in the simulation", t.video)
	}
	// The freed node first, then the rest: completing a task may have made
	// others ready that fit elsewhere.
	if err := s.placeOn(n); err != nil {
		return err
	}
	return s.placeAll()
}
