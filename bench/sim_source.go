package bench

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// The arrival stream. Which videos arrive when depends on nothing the farm
// does, so a source goroutine draws them ahead of the simulation (times,
// mixes, ids) and builds their task graphs and an auto video's scenes
// with scheduler.PrepareSubmit and PrepareScenes, which touch no State;
// the simulating goroutine only enters them. On a
// machine with two cores that takes a fifth of the work off the critical
// path. The source has its own random generator, seeded as the simulator's
// was, so the same seed gives the same arrivals as before the split.

// arrival is one video of the stream.
type arrival struct {
	at       time.Duration
	num      uint64 // the number in the video's id
	acct     int    // the account's index in its class (v.class)
	v        *simVideo
	prepared *scheduler.Prepared
}

// arrivalBatch is how many arrivals the source hands over at a time, and
// arrivalBatches how many batches may wait. The records the source makes
// are read again when the simulating goroutine enters them: about 600
// arrivals ahead (a few MB) they are still in the shared cache then;
// 4,000 and more ahead (512 × 8 waiting, as before) they were not, which
// cost the simulating goroutine a tenth of its time.
const (
	arrivalBatch   = 128
	arrivalBatches = 4
)

// source draws the workload's arrivals up to the horizon.
type source struct {
	wl       Workload
	rng      *rand.Rand
	horizon  time.Duration
	warmup   time.Duration
	maxRate  float64
	manualW  []float64
	classW   []float64
	sceneSec int
	catalog  map[string]models.Model
	nextID   uint64
	// acctIDs are the accounts' ids by class and index, made on first use:
	// one string per account, not per video.
	acctIDs [][]string
}

func newSource(wl Workload, cfg SimConfig) *source {
	src := &source{
		wl:       wl,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		horizon:  hoursDur(cfg.Hours),
		warmup:   hoursDur(cfg.WarmupHours),
		sceneSec: defaultSceneSeconds,
		catalog:  map[string]models.Model{},
	}
	if wl.Auto != nil && wl.Auto.SceneSeconds > 0 {
		src.sceneSec = wl.Auto.SceneSeconds
	}
	// Read once: models.Get copies.
	for _, mix := range wl.Manual {
		src.catalog[mix.Model], _ = models.Get(mix.Model) // validated: it exists
	}
	if wl.Auto != nil {
		src.catalog[wl.Auto.SceneModel], _ = models.Get(wl.Auto.SceneModel)
	}
	for _, m := range wl.Manual {
		src.manualW = append(src.manualW, m.Weight)
	}
	for _, c := range wl.Accounts {
		src.classW = append(src.classW, c.Share)
	}
	src.acctIDs = make([][]string, len(wl.Accounts))
	src.maxRate = src.peakRate()
	return src
}

// run sends the arrivals in batches on out, in time order, and closes it
// after the last (or sends the error that stopped it). It returns early
// when stop is closed.
func (src *source) run(out chan<- []arrival, errc chan<- error, stop <-chan struct{}) {
	defer close(out)
	batch := make([]arrival, 0, arrivalBatch)
	send := func() bool {
		select {
		case out <- batch:
			batch = make([]arrival, 0, arrivalBatch)
			return true
		case <-stop:
			return false
		}
	}
	t, ok := src.next(0)
	for ok {
		// The next arrival's time is drawn before this one's mix, as the
		// simulator always drew them.
		tn, more := src.next(t)
		a, err := src.draw(t)
		if err != nil {
			errc <- err
			return
		}
		batch = append(batch, a)
		if len(batch) == arrivalBatch && !send() {
			return
		}
		t, ok = tn, more
	}
	if len(batch) > 0 {
		send()
	}
}

// rate is the arrival rate (per hour) at simulated time t.
func (src *source) rate(t time.Duration) float64 {
	a := src.wl.Arrival
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
func (src *source) peakRate() float64 {
	a := src.wl.Arrival
	r := a.RatePerHour * (1 + a.Amplitude)
	for _, b := range a.Bursts {
		if b.Multiplier > 1 {
			r *= b.Multiplier
		}
	}
	return r
}

// next draws the next arrival time after from: a Poisson process of rate
// maxRate, each point kept with probability rate(t)/maxRate
// (Lewis-Shedler thinning). It reports false past the horizon.
func (src *source) next(from time.Duration) (time.Duration, bool) {
	t := from
	for {
		t += hoursDur(src.rng.ExpFloat64() / src.maxRate)
		if t > src.horizon {
			return 0, false
		}
		if src.rng.Float64()*src.maxRate < src.rate(t) {
			return t, true
		}
	}
}

// draw makes the video that arrives at t: its account, mode, mix and
// task graph.
func (src *source) draw(t time.Duration) (arrival, error) {
	class := pickWeighted(src.rng, src.classW)
	ac := src.wl.Accounts[class]
	ai := src.rng.IntN(ac.Count)
	acct := src.acctID(class, ai)
	src.nextID++
	id := "v" + strconv.FormatUint(src.nextID, 10)
	info := scheduler.VideoInfo{ID: id, AccountID: acct, Priority: ac.Priority}
	v := &simVideo{class: class, submitted: t, counted: t >= src.warmup}
	var g scheduler.Graph
	if src.rng.Float64() < src.wl.ManualShare {
		mix := src.wl.Manual[pickWeighted(src.rng, src.manualW)]
		m := src.catalog[mix.Model]
		v.mode = scheduler.ModeManual
		v.seconds = mix.Durations[src.rng.IntN(len(mix.Durations))]
		v.resolution, v.model = mix.Resolution, mix.Model
		v.gpuSeconds = renderSeconds(m, v.resolution, v.seconds)
		g = scheduler.ManualGraph(info, gpuReq(m, mix.Resolution))
	} else {
		v.mode = scheduler.ModeAuto
		v.seconds = src.wl.Auto.Durations[src.rng.IntN(len(src.wl.Auto.Durations))]
		v.scenes = (v.seconds + src.sceneSec - 1) / src.sceneSec
		v.resolution, v.model = src.wl.Auto.SceneResolution, src.wl.Auto.SceneModel
		v.gpuSeconds = renderSeconds(src.catalog[src.wl.Auto.SceneModel], v.resolution, src.sceneSec)
		g = scheduler.AutoGraph(info)
		m := src.catalog[src.wl.Auto.SceneModel]
		ps, err := scheduler.PrepareScenes(id, v.scenes, gpuReq(m, v.resolution))
		if err != nil {
			return arrival{}, err
		}
		v.prepScenes = ps
	}
	p, err := scheduler.PrepareSubmit(g)
	if err != nil {
		return arrival{}, err
	}
	return arrival{at: t, num: src.nextID, acct: ai, v: v, prepared: p}, nil
}

// acctID is the id of account i (from 0) of class c: its name and number.
func (src *source) acctID(c, i int) string {
	ids := src.acctIDs[c]
	if ids == nil {
		ids = make([]string, src.wl.Accounts[c].Count)
		src.acctIDs[c] = ids
	}
	if ids[i] == "" {
		ids[i] = src.wl.Accounts[c].Name + "-" + strconv.Itoa(i+1)
	}
	return ids[i]
}
