package bench

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Replications. One run's mean wait moves by a few per cent from seed to
// seed, its p99 by more; N independent runs (seeds Seed … Seed+N−1, one
// scheduler.State each, in parallel) give every figure as the mean over
// the runs and a 95% confidence interval from Student's t with N−1
// degrees of freedom: mean ± t(0.975, N−1)·s/√N, s the runs' sample
// standard deviation. A percentile's interval is that of the mean of the
// runs' percentiles (each run's p95 is one observation), not a percentile
// of the pooled videos. Runs are independent, so the interval is honest
// as long as each run is long enough for its own figure to be roughly
// normal; it says nothing about bias from too short a warm-up.

// maxReplications bounds --replications.
const maxReplications = 1000

// ciLevel is the confidence of the intervals.
const ciLevel = 0.95

// Estimate is one figure of a replicated report: the mean over the
// replications and its 95% confidence interval. Scope, name and metric
// are the figure's CSV columns.
type Estimate struct {
	Scope  string  `json:"scope"`
	Name   string  `json:"name"`
	Metric string  `json:"metric"`
	Mean   float64 `json:"mean"`
	CILow  float64 `json:"ci_low"`
	CIHigh float64 `json:"ci_high"`
	// Runs is how many runs measured the figure when fewer than all did
	// (absent: all of them); mean and interval are over those. One run
	// gives no interval (Student's t needs two): CILow and CIHigh are
	// then its value and say nothing of how sure it is (oneRun).
	Runs int `json:"runs,omitempty"`
}

// oneRun: only one run measured the figure, so it has a mean and no
// interval; a verdict on it is uncertain.
func (e Estimate) oneRun() bool { return e.Runs == 1 }

// HalfWidth is half the interval's width: the ± of the table when the
// interval is symmetric about the mean (not when cut at a bound:
// cutInterval).
func (e Estimate) HalfWidth() float64 { return (e.CIHigh - e.CILow) / 2 }

// meanCI returns the mean of xs and its confidence interval (the mean
// alone when there are fewer than two). Sums run over deviations from
// xs[0], in order, so equal values give exactly that value and any
// scheduling of the runs gives the same bits.
func meanCI(xs []float64) (mean, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	n := float64(len(xs))
	var d float64
	for _, x := range xs {
		d += x - xs[0]
	}
	mean = xs[0] + d/n
	if len(xs) < 2 {
		return mean, mean, mean
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	h := tQuantile(len(xs)-1) * math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	return mean, mean - h, mean + h
}

// tQuantile is Student's t at (1+ciLevel)/2 with df degrees of freedom.
func tQuantile(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile((1 + ciLevel) / 2)
}

// forEach calls fn(0) … fn(n-1) on at most par goroutines (0: GOMAXPROCS).
func forEach(n, par int, fn func(i int)) {
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// replicaConfig is cfg for replication i: its seed, one run.
func replicaConfig(cfg SimConfig, i int) SimConfig {
	cfg.Seed += uint64(i)
	cfg.Replications = 1
	cfg.Progress = nil
	return cfg
}

// replicate runs cfg.Replications runs in parallel and combines them.
func replicate(fleet Fleet, wl Workload, cfg SimConfig) (SimReport, error) {
	n := cfg.Replications
	reps, errs := make([]SimReport, n), make([]error, n)
	var (
		mu   sync.Mutex
		done = make([]time.Duration, n)
	)
	total := time.Duration(n) * hoursDur(cfg.Hours)
	perRun, err := checkVideos(wl, cfg.Hours)
	if err != nil {
		return SimReport{}, err
	}
	forEach(n, runsAtOnce(perRun, cfg.Parallel), func(i int) {
		c := replicaConfig(cfg, i)
		if cfg.Progress != nil {
			c.Progress = func(d, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				done[i] = d
				var sum time.Duration
				for _, x := range done {
					sum += x
				}
				cfg.Progress(sum, total)
			}
		}
		reps[i], errs[i] = simulateOnce(fleet, wl, c)
	})
	for i, err := range errs {
		if err != nil {
			return SimReport{}, fmt.Errorf("bench: replication %d (seed %d): %w", i+1, cfg.Seed+uint64(i), err)
		}
	}
	return combine(reps), nil
}

// cutInterval cuts the interval of a mean to [0, top], the values the
// figure can take: [0, 1] for a proportion, [0, ∞) for everything else a
// report holds (counts, waits and other durations, rates, costs). The
// interval is Student's t over the runs: each run's figure (its share of
// videos within an SLO, its p95 wait) is one observation, and the
// interval is for the mean of those. With few runs it reaches past the
// bounds: two runs with 0 and 1 videos in flight give 0.5 ± 6.4, and a
// p95 wait near 0 reaches below 0 the same way. The mean of values in
// [0, top] lies in [0, top] itself, so the part of the interval outside
// cannot hold it: cutting it off (clamping) keeps the interval's 95%
// coverage, only shortens it, and changes no verdict against a target in
// (0, 1]. It makes the interval asymmetric about the mean, which the
// table then writes as −a/+b (plusMinus).
//
// Not a Wilson score interval for proportions either: that is for
// independent trials, and the videos of one run are not (one backlog
// delays hundreds of them at once), so over the pooled videos it would
// claim a precision the runs do not have.
func cutInterval(lo, hi, top float64) (float64, float64) {
	return min(max(lo, 0), top), min(max(hi, 0), top)
}

// combine is the report of replicated runs of one fleet and workload:
// each figure the mean over reps (counts too, unrounded), CI the interval
// of every figure in CSV order, and each SLO's verdict from its
// attainment's interval, Met only when that is certain. A figure measured on nothing in some runs
// (an SLO's attainment, a class's p95 wait in runs in which none of its
// videos got a GPU, the GPU wait of a timeline interval without a lease)
// is the mean and interval of the other runs: a run without a sample has
// no value to average, and a 0 in its place would pull the mean towards
// instant service. Measured in none, the figure is 0 with its no-data
// flag set and has no interval; its SLO has no data.
func combine(reps []SimReport) SimReport {
	out := reps[0].clone()
	out.Replications = len(reps)
	figs := make([][]figure, len(reps))
	for i := range reps {
		figs[i] = reps[i].figures()
	}
	xs := make([]float64, 0, len(reps))
	for k, f := range out.figures() {
		if f.fixed || f.b != nil {
			continue
		}
		xs = xs[:0]
		for i := range reps {
			g := figs[i][k]
			if g.scope != f.scope || g.name != f.name || g.metric != f.metric {
				panic(fmt.Sprintf("bench: replications differ in shape: %s/%s/%s and %s/%s/%s", f.scope, f.name, f.metric, g.scope, g.name, g.metric))
			}
			if !g.empty() {
				xs = append(xs, g.value())
			}
		}
		if f.noData != nil {
			*f.noData = len(xs) == 0
		}
		if len(xs) == 0 {
			f.set(0)
			continue
		}
		m, lo, hi := meanCI(xs)
		lo, hi = cutInterval(lo, hi, f.top())
		f.set(m)
		e := Estimate{Scope: f.scope, Name: f.name, Metric: f.metric, Mean: m, CILow: lo, CIHigh: hi}
		if len(xs) < len(reps) {
			e.Runs = len(xs)
		}
		if f.hidden {
			// Sample sizes: the table writes their means at the
			// precision of these intervals.
			out.hiddenCI = append(out.hiddenCI, e)
		} else {
			out.CI = append(out.CI, e)
		}
	}
	// One verdict for every output, the table's: a met from the mean alone
	// would be true where the interval reaches below the target or one
	// run alone measured it, and a reader of the JSON or CSV would size a
	// fleet on what the table calls uncertain.
	est := out.estimates()
	for _, sg := range out.scopedGroups() {
		for i := range sg.g.SLOs {
			o := &sg.g.SLOs[i]
			o.Verdict = SLONoData
			if !o.NoData {
				o.Verdict = verdict(est[sg.scope+"/"+sg.g.Name+"/"+sloKey(o.SLO)+"_attained"], o.target())
			}
			o.Met = o.Verdict == SLOMet
		}
	}
	out.setClassCosts(out.Currency)
	out.notStarted = 0
	for _, r := range reps {
		out.notStarted += r.notStarted / float64(len(reps))
	}
	out.setOverload()
	return out
}

// clone copies r deeply enough that combine may overwrite its figures.
func (r SimReport) clone() SimReport {
	c := r
	c.Modes = append([]GroupStats(nil), r.Modes...)
	c.Accounts = append([]GroupStats(nil), r.Accounts...)
	c.Timeline = append([]TimelinePoint(nil), r.Timeline...)
	c.CI, c.hiddenCI = nil, nil
	if r.Faults != nil {
		f := *r.Faults
		c.Faults = &f
	}
	for _, g := range c.groups() {
		g.SLOs = append([]SLOResult(nil), g.SLOs...)
	}
	return c
}

// groups are pointers to every group of r: overall, modes, classes.
func (r *SimReport) groups() []*GroupStats {
	var gs []*GroupStats
	for _, sg := range r.scopedGroups() {
		gs = append(gs, sg.g)
	}
	return gs
}

// scopedGroup is a group of a report and its figures' scope.
type scopedGroup struct {
	scope string
	g     *GroupStats
}

// scopedGroups are r's groups in figure order, each with its scope.
func (r *SimReport) scopedGroups() []scopedGroup {
	gs := []scopedGroup{{"all", &r.Overall}}
	for i := range r.Modes {
		gs = append(gs, scopedGroup{"mode", &r.Modes[i]})
	}
	for i := range r.Accounts {
		gs = append(gs, scopedGroup{"class", &r.Accounts[i]})
	}
	return gs
}

// estimates indexes r.CI, and the intervals of the sample sizes, by
// scope/name/metric.
func (r SimReport) estimates() map[string]Estimate {
	m := make(map[string]Estimate, len(r.CI)+len(r.hiddenCI))
	for _, list := range [][]Estimate{r.CI, r.hiddenCI} {
		for _, e := range list {
			m[e.Scope+"/"+e.Name+"/"+e.Metric] = e
		}
	}
	return m
}
