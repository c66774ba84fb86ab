package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

func (s *sim) addNodes() error {
	for gi, g := range s.fleet.Groups {
		speed, _ := s.fleet.speed(g.GPUModel)
		mods := g.Models
		if len(mods) == 0 {
			mods = models.IDs()
		}
		scales := s.fleet.gpuScales(g.GPUModel)
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
			sn := &simNode{id: n.ID, group: gi, speed: speed, gpus: g.GPUsPerNode, cpu: g.CPUSlots, freeGPU: g.GPUsPerNode, freeCPU: g.CPUSlots, spec: n,
				scale: scales}
			if err := s.nodeRef(sn); err != nil {
				return err
			}
			sn.idx = len(s.nodes)
			s.nodes = append(s.nodes, sn)
			if sn.idx>>6 == len(s.gpuRoom) {
				s.gpuRoom, s.cpuRoom = append(s.gpuRoom, 0), append(s.cpuRoom, 0)
			}
			s.roomChanged(sn)
			s.byID[sn.id] = sn
		}
	}
	return nil
}

// nodeRef takes n's scheduler handle, which spares PlaceGrant a lookup by
// id.
func (s *sim) nodeRef(n *simNode) error {
	r, err := s.st.NodeRef(n.id)
	if err != nil {
		return fmt.Errorf("bench: node %s: %w", n.id, err)
	}
	n.ref = r
	return nil
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
		return mean * s.svc.ExpFloat64()
	}
	return mean
}

// gpuReq is what one render of m at res needs from the scheduler.
// nodeTools are the tools every simulated node has: those the scheduler's CPU
// stages need, so a new tool there cannot leave simulated tasks unplaceable.
func nodeTools() []string {
	var out []string
	for _, st := range allCPUStages() {
		for _, t := range st.req.Tools {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// renderSeconds is how long a render of out seconds of m at res holds
// each of its GPUs at speed 1: GPU-seconds are summed over the render's
// GPUs, and its wall time splits them.
func renderSeconds(m models.Model, res string, out int) float64 {
	return m.GPUSeconds(res, out) / float64(max(m.Requirements.GPUCount, 1))
}

func gpuReq(m models.Model, res string) scheduler.Requirements {
	return scheduler.Requirements{
		GPUs:        m.Requirements.GPUCount,
		GPUMemoryGB: float64(m.Requirements.GPUMemoryGB[res]),
		Model:       m.ID,
	}
}

// queueArrival takes the next arrival from the source and queues its
// event; past the last one it does nothing.
func (s *sim) queueArrival() error {
	if len(s.batch) == 0 {
		b, ok := <-s.arrivals
		if !ok {
			select {
			case err := <-s.srcErr:
				return fmt.Errorf("bench: arrivals: %w", err)
			default:
				return nil
			}
		}
		s.batch = b
	}
	s.next, s.batch = s.batch[0], s.batch[1:]
	s.push(s.next.at, evArrival, nil)
	return nil
}

// accountRef is the scheduler's handle on a's account, taken on its first
// video: the simulator's table by class and index spares the scheduler a
// lookup by id per video.
func (s *sim) accountRef(a arrival) scheduler.AccountRef {
	refs := s.accts[a.v.class]
	if refs == nil {
		refs = make([]scheduler.AccountRef, s.wl.Accounts[a.v.class].Count)
		s.accts[a.v.class] = refs
	}
	if refs[a.acct] == (scheduler.AccountRef{}) {
		refs[a.acct] = s.st.AccountRef(a.prepared.AccountID())
	}
	return refs[a.acct]
}

// arrive submits the video whose arrival event is due and offers it.
func (s *sim) arrive() error {
	a := s.next
	if err := s.queueArrival(); err != nil {
		return err
	}
	if err := s.st.SubmitPreparedFor(a.prepared, s.accountRef(a), s.at(s.now)); err != nil {
		return fmt.Errorf("bench: submit v%d: %w", a.num, err)
	}
	gpuReady := 0
	if a.v.mode == scheduler.ModeManual {
		gpuReady = 1
	}
	if err := s.readied(gpuReady); err != nil {
		return err
	}
	s.videos.put(a.num, a.v)
	s.rec.submitted(a.v)
	return s.placeAll()
}
