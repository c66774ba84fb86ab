package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/vidfarm/vidfarm/models"
)

// Faults and warm-up. Both are optional per node group; a fleet without
// them runs as before, drawing nothing more from any generator.
//
// Node failures and agent restarts are one mechanism with two sets of
// numbers: a node up draws an exponential time to its next failure (mean
// mtbf) and to its next agent restart (mean agent_restart_every); the
// first to come takes the node down. Going down is what production does
// when a node is gone: RemoveNode revokes its leases and requeues their
// tasks without counting a failure against them (detection is taken as
// instant: the lease expiry and node timeout that would notice a silent
// node in production are not waited for). The work in flight is lost, its
// GPU time counted as lost, and its warm models with it. After an
// exponential repair time (mean repair, or agent_restart_time) the node
// registers again with UpsertNode, empty-handed and cold. Draws come from
// a generator of their own, seeded from the run's seed.
//
// Cold starts. With model_load on a group, a node tracks the models warm
// on it: a GPU task whose model is not warm pays the group's load time for
// it before it renders (its GPUs held meanwhile), and the model is warm on
// the node from then on, reported to the scheduler with UpsertNode
// (Node.WarmModels), which is what its warm-model preference
// (Config.WarmWindow) reads, as in production. A task placed while its
// model is still loading waits for the rest of the load. warm_slots bounds
// the warm models of a node (0: no bound); the least recently used one is
// evicted, even while a task of it still runs.

// groupFaults is a group's fault and warm-up settings, parsed.
type groupFaults struct {
	mtbf, repair              time.Duration // zero: no failures
	restartEvery, restartTime time.Duration // zero: no restarts
	load                      map[string]time.Duration
	loadDefault               time.Duration
	tracksWarm                bool // model_load set
	slots                     int  // warm models per node; 0: unbounded
}

func (f groupFaults) churn() bool { return f.mtbf > 0 || f.restartEvery > 0 }

// loadTime is how long a node of the group takes to load model m.
func (f groupFaults) loadTime(m string) time.Duration {
	if d, ok := f.load[m]; ok {
		return d
	}
	return f.loadDefault
}

const (
	maxWarmSlots = 1000
	maxModelLoad = 24 * time.Hour
)

// faults parses and checks g's fault and warm-up fields; p is the group's
// path for errors.
func (g NodeGroup) faults(p string) (groupFaults, error) {
	var f groupFaults
	dur := func(field, v string, lo time.Duration) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fieldErr(p+"."+field, "must be a duration such as \"90s\" or \"720h\", got %q", v)
		}
		if d < lo || d > maxSimHours*time.Hour*100 {
			return 0, fieldErr(p+"."+field, "must be at least %v and at most %d h, got %v", lo, maxSimHours*100, v)
		}
		return d, nil
	}
	var err error
	if f.mtbf, err = dur("mtbf", g.MTBF, time.Minute); err != nil {
		return f, err
	}
	if f.repair, err = dur("repair", g.Repair, time.Second); err != nil {
		return f, err
	}
	if f.restartEvery, err = dur("agent_restart_every", g.AgentRestartEvery, time.Minute); err != nil {
		return f, err
	}
	if f.restartTime, err = dur("agent_restart_time", g.AgentRestartTime, time.Second); err != nil {
		return f, err
	}
	switch {
	case (f.mtbf > 0) != (f.repair > 0):
		return f, fieldErr(p+".repair", "mtbf and repair go together: set both or neither")
	case (f.restartEvery > 0) != (f.restartTime > 0):
		return f, fieldErr(p+".agent_restart_time", "agent_restart_every and agent_restart_time go together: set both or neither")
	case g.WarmSlots < 0 || g.WarmSlots > maxWarmSlots:
		return f, fieldErr(p+".warm_slots", "must be 0..%d (0: no bound), got %d", maxWarmSlots, g.WarmSlots)
	case g.WarmSlots > 0 && len(g.ModelLoad) == 0:
		return f, fieldErr(p+".warm_slots", "needs model_load")
	}
	f.slots = g.WarmSlots
	if len(g.ModelLoad) == 0 {
		return f, nil
	}
	f.tracksWarm = true
	f.load = make(map[string]time.Duration, len(g.ModelLoad))
	keys := make([]string, 0, len(g.ModelLoad))
	for k := range g.ModelLoad {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := fmt.Sprintf("%s.model_load[%q]", p, k)
		if _, ok := models.Get(k); !ok && k != "*" {
			return f, fieldErr(field, "unknown model (a catalog id, or \"*\" for the default)")
		}
		d, err := time.ParseDuration(g.ModelLoad[k])
		if err != nil || d < 0 || d > maxModelLoad {
			return f, fieldErr(field, "must be a duration from 0s to %v, got %q", maxModelLoad, g.ModelLoad[k])
		}
		if k == "*" {
			f.loadDefault = d
		} else {
			f.load[k] = d
		}
	}
	return f, nil
}

// warmModel is a model warm (or loading) on a node.
type warmModel struct {
	id    string
	ready time.Duration // when its load ends
}

// faultRec counts what faults and cold starts cost in a run.
type faultRec struct {
	downMS                    int64 // node-milliseconds down before the horizon
	failures, restarts        int
	lostGPUMS                 int64
	requeued                  int
	coldStarts                int
	loadGPUMS                 int64
	gpuPlacements, warmPlaces int
	requeuedTasks             map[string]bool // task ids requeued and not leased again
	churnOn, warmOn           bool
}

// FaultStats is what node failures, agent restarts and cold starts cost
// in a run (SimReport.Faults); present when the fleet sets any of them.
type FaultStats struct {
	// NodeAvailability is the mean fraction of nodes up over the run.
	NodeAvailability float64 `json:"node_availability"`
	// The counts are means with replications (SimReport.Submitted).
	NodeFailures  float64 `json:"node_failures"`
	AgentRestarts float64 `json:"agent_restarts"`
	// GPUHoursLost is the GPU time of tasks lost to failures and restarts
	// (they ran, then started over elsewhere).
	GPUHoursLost  float64 `json:"gpu_hours_lost"`
	TasksRequeued float64 `json:"tasks_requeued"`
	// ColdStarts counts GPU tasks that loaded their model first;
	// LoadGPUHours is the GPU time spent loading models.
	ColdStarts   float64 `json:"cold_starts"`
	LoadGPUHours float64 `json:"load_gpu_hours"`
	// GPUPlacements are the GPU tasks leased on nodes that track warm
	// models; WarmHitShare the share of them whose model was warm there,
	// none when there were no placements (WarmHitShareNoData; with
	// replications, in no run).
	GPUPlacements      float64 `json:"gpu_placements"`
	WarmHitShare       float64 `json:"warm_hit_share"`
	WarmHitShareNoData bool    `json:"warm_hit_share_no_data,omitempty"`
}

// setupFaults parses the groups' fault settings and, when a group has
// churn, schedules every node's first failure and restart.
func (s *sim) setupFaults() {
	for _, g := range s.fleet.Groups {
		f, _ := g.faults("") // validated
		s.gfaults = append(s.gfaults, f)
		s.flt.churnOn = s.flt.churnOn || f.churn()
		s.flt.warmOn = s.flt.warmOn || f.tracksWarm
	}
	if !s.flt.churnOn {
		return
	}
	s.fltRand = rand.New(rand.NewPCG(s.cfg.Seed^0xbb67ae8584caa73b, s.cfg.Seed^0x3c6ef372fe94f82b))
	s.flt.requeuedTasks = map[string]bool{}
	for _, n := range s.nodes {
		s.scheduleFaults(n)
	}
}

// expDur draws an exponential duration of the given mean.
func (s *sim) expDur(mean time.Duration) time.Duration {
	return durOf(float64(mean) * s.fltRand.ExpFloat64())
}

// scheduleFaults draws n's next failure and restart; the first to come
// takes it down, the other is then stale (another epoch).
func (s *sim) scheduleFaults(n *simNode) {
	f := s.gfaults[n.group]
	if f.mtbf > 0 {
		s.pushNode(later(s.now, s.expDur(f.mtbf)), evFail, n)
	}
	if f.restartEvery > 0 {
		s.pushNode(later(s.now, s.expDur(f.restartEvery)), evRestart, n)
	}
}

// down takes n out: the scheduler forgets it and requeues its tasks, the
// simulator drops them, and n comes back after a repair or restart time.
func (s *sim) down(e event) error {
	n, epoch := e.task.node, e.task.epoch
	s.freeTask(e.task)
	if n.down || epoch != n.epoch {
		return nil
	}
	f := s.gfaults[n.group]
	back := f.repair
	if e.kind() == evRestart {
		back = f.restartTime
		s.flt.restarts++
	} else {
		s.flt.failures++
	}
	n.down, n.downSince = true, s.now
	n.epoch++
	leases, err := s.st.RemoveNode(n.id, s.at(s.now))
	if err != nil {
		return fmt.Errorf("bench: node %s down: %w", n.id, err)
	}
	gpu, lost := 0, 0
	for i := 0; i < len(s.running); {
		t := s.running[i]
		if t.node != n {
			i++
			continue
		}
		s.dropRunning(t)
		t.lost = true
		t.end = s.now
		s.rec.busy(t, s.horizon)
		s.flt.lostGPUMS += (s.now - t.started).Milliseconds() * int64(t.gpus)
		s.flt.requeuedTasks[t.grant.Ref.TaskID] = true
		if t.gpus > 0 {
			gpu++
		}
		lost++
	}
	if lost != len(leases) {
		return fmt.Errorf("%w: node %s held %d leases, the simulator ran %d tasks on it", errReadyCount, n.id, len(leases), lost)
	}
	s.flt.requeued += lost
	n.warm = n.warm[:0]
	n.freeGPU, n.freeCPU = n.gpus, n.cpu
	s.roomChanged(n)
	if err := s.readied(gpu); err != nil {
		return err
	}
	s.pushNode(later(s.now, s.expDur(back)), evUp, n)
	return s.placeAll()
}

// up registers n again, cold, and offers it work.
func (s *sim) up(e event) error {
	n, epoch := e.task.node, e.task.epoch
	s.freeTask(e.task)
	if !n.down || epoch != n.epoch {
		return nil
	}
	n.down = false
	s.flt.downMS += (min(s.now, s.horizon) - n.downSince).Milliseconds()
	spec := n.spec
	spec.WarmModels = nil
	if err := s.st.UpsertNode(spec, s.at(s.now)); err != nil {
		return fmt.Errorf("bench: node %s back: %w", n.id, err)
	}
	if err := s.nodeRef(n); err != nil { // registered again: a new record
		return err
	}
	n.gpuNo, n.cpuNo = 0, 0
	s.scheduleFaults(n)
	if err := s.readied(0); err != nil {
		return err
	}
	return s.placeOn(n)
}

// warmUp is the load time a GPU task of model m pays on n before it
// renders, and makes m warm on n (reporting the change to the scheduler).
func (s *sim) warmUp(n *simNode, m string, gpus int) (time.Duration, error) {
	f := &s.gfaults[n.group] // not a copy: this runs on every lease
	if !f.tracksWarm || gpus == 0 || m == "" {
		return 0, nil
	}
	s.flt.gpuPlacements++
	if i := slices.IndexFunc(n.warm, func(w warmModel) bool { return w.id == m }); i >= 0 {
		w := n.warm[i]
		s.flt.warmPlaces++
		copy(n.warm[i:], n.warm[i+1:]) // most recently used last
		n.warm[len(n.warm)-1] = w
		wait := max(w.ready-s.now, 0)
		s.flt.loadGPUMS += wait.Milliseconds() * int64(gpus)
		return wait, nil
	}
	load := f.loadTime(m)
	s.flt.coldStarts++
	s.flt.loadGPUMS += load.Milliseconds() * int64(gpus)
	n.warm = append(n.warm, warmModel{id: m, ready: later(s.now, load)})
	if f.slots > 0 && len(n.warm) > f.slots {
		n.warm = append(n.warm[:0], n.warm[len(n.warm)-f.slots:]...)
	}
	spec := n.spec
	spec.WarmModels = make([]string, len(n.warm))
	for i, w := range n.warm {
		spec.WarmModels[i] = w.id
	}
	if err := s.st.UpsertNode(spec, s.at(s.now)); err != nil {
		return 0, fmt.Errorf("bench: node %s warm models: %w", n.id, err)
	}
	return load, nil
}

// faultStats is the report's FaultStats, or nil for a fleet without
// faults or warm-up.
func (s *sim) faultStats() *FaultStats {
	if !s.flt.churnOn && !s.flt.warmOn {
		return nil
	}
	down := s.flt.downMS
	for _, n := range s.nodes {
		if n.down {
			down += (s.horizon - n.downSince).Milliseconds()
		}
	}
	run := float64(s.horizon.Milliseconds()) * float64(len(s.nodes))
	fs := &FaultStats{
		NodeAvailability: 1 - float64(down)/run,
		NodeFailures:     float64(s.flt.failures),
		AgentRestarts:    float64(s.flt.restarts),
		GPUHoursLost:     float64(s.flt.lostGPUMS) / 3.6e6,
		TasksRequeued:    float64(s.flt.requeued),
		ColdStarts:       float64(s.flt.coldStarts),
		LoadGPUHours:     float64(s.flt.loadGPUMS) / 3.6e6,
		GPUPlacements:    float64(s.flt.gpuPlacements),
	}
	if fs.GPUPlacements > 0 {
		fs.WarmHitShare = float64(s.flt.warmPlaces) / fs.GPUPlacements
	} else {
		fs.WarmHitShareNoData = true
	}
	return fs
}
