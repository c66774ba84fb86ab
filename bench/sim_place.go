package bench

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Placement. A real agent long-polls for work whenever it has room; the
// simulator asks instead only the nodes that could get an answer other than
// ErrNoWork, which is what makes a week of a large farm take seconds. A
// node that answered ErrNoWork keeps answering it until tasks of a kind it
// has room for become ready, or its own capacity grows: a readiness
// generation per kind (GPU, CPU) and a capacity reset tell the two apart.
// GPU tasks (renders, scenes) need no CPU slot and CPU tasks no GPU; GPU
// tasks become ready only on a manual Submit, on AddScenes and when a
// node goes down (RemoveNode requeues its tasks: sim_faults.go; leases
// never expire here), and the scheduler's ready count gives the CPU tasks
// as the rest.

// errReadyCount means the scheduler made tasks ready in a way the
// simulator's placement does not know of (see above): its answers would
// no longer match asking every node, so the run stops.
var errReadyCount = errors.New("bench: the scheduler's ready tasks no longer match the simulator's GPU/CPU counts")

// readied updates the ready counts after a Submit, Complete or AddScenes
// that made gpu GPU tasks ready.
func (s *sim) readied(gpu int) error {
	if gpu > 0 {
		s.readyGPU += gpu
		s.gpuGen++
	}
	cpu := s.st.ReadyTasks() - s.readyGPU
	if cpu < 0 {
		return fmt.Errorf("%w: %d ready, %d of them GPU tasks", errReadyCount, cpu+s.readyGPU, s.readyGPU)
	}
	if cpu > s.readyCPU {
		s.cpuGen++
	}
	s.readyCPU = cpu
	return nil
}

// worth reports whether asking n for work could place something.
func (s *sim) worth(n *simNode) bool {
	return !n.down && ((n.freeGPU > 0 && s.readyGPU > 0 && n.gpuNo != s.gpuGen) ||
		(n.freeCPU > 0 && s.readyCPU > 0 && n.cpuNo != s.cpuGen))
}

// placeAll offers work to every node that could take some, in the
// nodes' order. Only nodes with room for a ready kind are visited: a
// busy farm has most nodes' GPUs taken, and asking each of them whether it
// is worth asking cost more than the rest of placing an arrival. Placing
// on one node changes no other node's room, so the room sets are read as
// the walk goes.
func (s *sim) placeAll() error {
	for i := 0; s.readyGPU > 0 || s.readyCPU > 0; i++ {
		if i = s.nextRoom(i); i < 0 {
			return nil
		}
		if err := s.placeOn(s.nodes[i]); err != nil {
			return err
		}
	}
	return nil
}

// nextRoom is the index of the first node from i on with free GPUs while
// GPU tasks are ready or free CPU slots while CPU tasks are; -1 if none.
func (s *sim) nextRoom(i int) int {
	for w := i >> 6; w < len(s.gpuRoom); w++ {
		var room uint64
		if s.readyGPU > 0 {
			room |= s.gpuRoom[w]
		}
		if s.readyCPU > 0 {
			room |= s.cpuRoom[w]
		}
		if w == i>>6 {
			room &= ^uint64(0) << (i & 63)
		}
		if room != 0 {
			return w<<6 + bits.TrailingZeros64(room)
		}
	}
	return -1
}

// roomChanged brings n's bits in the room sets up to date after its free
// GPUs or CPU slots changed.
func (s *sim) roomChanged(n *simNode) {
	w, b := n.idx>>6, uint64(1)<<(n.idx&63)
	if n.freeGPU > 0 {
		s.gpuRoom[w] |= b
	} else {
		s.gpuRoom[w] &^= b
	}
	if n.freeCPU > 0 {
		s.cpuRoom[w] |= b
	} else {
		s.cpuRoom[w] &^= b
	}
}

// placeOn calls Place for n until it answers ErrNoWork, starting each task
// it gets.
func (s *sim) placeOn(n *simNode) error {
	for s.worth(n) {
		// The grant is written straight into the task's record.
		t := s.newTask()
		err := s.st.PlaceGrant(n.ref, s.at(s.now), simLease, &t.grant)
		if errors.Is(err, scheduler.ErrNoWork) {
			s.spare = append(s.spare, t) // untouched: still zero
			n.gpuNo, n.cpuNo = s.gpuGen, s.cpuGen
			return nil
		}
		if err != nil {
			return fmt.Errorf("bench: place on %s: %w", n.id, err)
		}
		if err := s.start(n, t); err != nil {
			return err
		}
	}
	return nil
}

// start runs the task just granted into t.grant on n.
func (s *sim) start(n *simNode, t *simTask) error {
	g := &t.grant
	v := s.videos.get(g.VideoSeq)
	load, err := s.warmUp(n, g.Model, g.GPUs)
	if err != nil {
		return err
	}
	sec := s.serviceSeconds(s.taskSeconds(n, v, g.Kind))
	t.v, t.class, t.idx, t.node, t.gpus, t.cpu = v, v.class, len(s.running), n, g.GPUs, g.CPUSlots
	t.started, t.end = s.now, later(s.now, later(load, secondsDur(sec)))
	n.freeGPU -= t.gpus
	n.freeCPU -= t.cpu
	s.roomChanged(n)
	s.running = append(s.running, t)
	if !v.leased {
		v.leased = true
		s.rec.firstLease(v, s.now-v.submitted)
	}
	// A task requeued by a node going down is leased again: its wait was
	// measured the first time (sim_faults.go).
	again := false
	if s.flt.requeuedTasks != nil {
		again = s.flt.requeuedTasks[g.Ref.TaskID]
		delete(s.flt.requeuedTasks, g.Ref.TaskID)
	}
	if g.GPUs > 0 {
		s.readyGPU--
		if !again {
			v.gpuLeased++
			ready := v.submitted
			if g.Kind == scheduler.KindScene {
				ready = v.scenesAt
			}
			s.rec.gpuLease(v, s.now, s.now-ready)
		}
	} else {
		s.readyCPU--
	}
	s.push(t.end, evDone, t)
	return nil
}

// taskSeconds is the mean service time of a lease's task on node n.
func (s *sim) taskSeconds(n *simNode, v *simVideo, kind scheduler.Kind) float64 {
	if kind == scheduler.KindRender || kind == scheduler.KindScene {
		if x, ok := n.scale[v.model]; ok {
			return v.gpuSeconds / n.speed * x
		}
		return v.gpuSeconds / n.speed
	}
	sec := cpuSeconds(kind, float64(v.seconds))
	if x, ok := s.fleet.TimeScale[string(kind)]; ok {
		sec *= x
	}
	return sec
}

// cpuSeconds is the modelled time of a CPU task of kind for a video of d
// seconds.
func cpuSeconds(kind scheduler.Kind, d float64) float64 {
	switch kind {
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
func (s *sim) complete(t *simTask) error {
	if t.lost {
		s.freeTask(t)
		return nil
	}
	g := &t.grant
	s.dropRunning(t)
	defer s.freeTask(t)
	n := t.node
	n.freeGPU += t.gpus
	n.freeCPU += t.cpu
	s.roomChanged(n)
	n.gpuNo, n.cpuNo = 0, 0
	s.rec.busy(t, s.horizon)
	out, err := s.st.CompleteGrant(g, s.at(s.now))
	if err != nil {
		return fmt.Errorf("bench: complete %s: %w", g.Ref.TaskID, err)
	}
	v := t.v
	gpuReady := 0
	if out.NeedsScenes {
		if err := s.st.AddPreparedScenes(v.prepScenes, s.at(s.now)); err != nil {
			return fmt.Errorf("bench: add scenes to %s: %w", g.VideoID, err)
		}
		v.prepScenes = nil
		v.scenesAt = s.now
		v.scenesReady = true
		gpuReady = v.scenes
	}
	if err := s.readied(gpuReady); err != nil {
		return err
	}
	if out.VideoCompleted {
		s.rec.completed(v, s.now, s.now-v.submitted)
		s.videos.drop(g.VideoSeq)
		if err := s.st.Forget(g.VideoID); err != nil {
			return fmt.Errorf("bench: forget %s: %w", g.VideoID, err)
		}
	}
	if out.VideoFailed {
		return fmt.Errorf("bench: video %s failed in the simulation", g.VideoID)
	}
	// The freed node first, then the rest: completing a task may have made
	// others ready that fit elsewhere.
	if err := s.placeOn(n); err != nil {
		return err
	}
	return s.placeAll()
}

// dropRunning takes t out of s.running.
func (s *sim) dropRunning(t *simTask) {
	last := len(s.running) - 1
	s.running[t.idx] = s.running[last]
	s.running[t.idx].idx = t.idx
	s.running[last] = nil
	s.running = s.running[:last]
}

// newTask returns a simTask record, reusing one whose task ended: a week
// of a large farm runs millions of tasks, a few thousand at a time.
func (s *sim) newTask() *simTask {
	if n := len(s.spare); n > 0 {
		t := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return t
	}
	return new(simTask)
}

// freeTask keeps t, whose task ended and whose event was handled, for reuse.
func (s *sim) freeTask(t *simTask) {
	*t = simTask{}
	s.spare = append(s.spare, t)
}
