package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

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

// videoNumber is the number in a simulated video's id ("v" and the
// number): the simulator's own map is keyed by it, which hashes faster.
func videoNumber(id string) uint64 {
	var n uint64
	for _, c := range []byte(id[1:]) {
		n = n*10 + uint64(c-'0')
	}
	return n
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

func (s *sim) arrive() error {
	s.scheduleArrival(s.now)
	class := pickWeighted(s.rng, s.classW)
	ac := s.wl.Accounts[class]
	acct := ac.Name + "-" + strconv.Itoa(s.rng.IntN(ac.Count)+1)
	s.nextID++
	id := "v" + strconv.FormatUint(s.nextID, 10)
	info := scheduler.VideoInfo{ID: id, AccountID: acct, Priority: ac.Priority}
	v := &simVideo{class: class, submitted: s.now, counted: s.now >= s.warmup}
	var g scheduler.Graph
	gpuReady := 0
	if s.rng.Float64() < s.wl.ManualShare {
		mix := s.wl.Manual[pickWeighted(s.rng, s.manualW)]
		m := s.catalog[mix.Model]
		v.mode = scheduler.ModeManual
		v.seconds = mix.Durations[s.rng.IntN(len(mix.Durations))]
		v.resolution = mix.Resolution
		v.gpuSeconds = renderSeconds(m, v.resolution, v.seconds)
		g = scheduler.ManualGraph(info, gpuReq(m, mix.Resolution))
		gpuReady = 1
	} else {
		v.mode = scheduler.ModeAuto
		v.seconds = s.wl.Auto.Durations[s.rng.IntN(len(s.wl.Auto.Durations))]
		v.scenes = (v.seconds + s.sceneSec - 1) / s.sceneSec
		v.resolution = s.wl.Auto.SceneResolution
		v.gpuSeconds = renderSeconds(s.catalog[s.wl.Auto.SceneModel], v.resolution, s.sceneSec)
		g = scheduler.AutoGraph(info)
	}
	if err := s.st.Submit(g, s.at(s.now)); err != nil {
		return fmt.Errorf("bench: submit %s: %w", id, err)
	}
	if err := s.readied(gpuReady); err != nil {
		return err
	}
	s.videos[s.nextID] = v
	s.rec.submitted(v)
	return s.placeAll()
}
