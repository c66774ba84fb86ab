package bench

import (
	"fmt"
	"math"
	"sync"
)

// SweepConfig asks for the smallest size of one node group that meets a
// p95 target or, with no target, every account class's SLOs at once.
// Every other input is the fleet, workload and SimConfig given to Sweep.
type SweepConfig struct {
	// Group names the node group whose Count varies from Min to Max by Step
	// (0, the zero value, means 1).
	Group          string
	Min, Max, Step int
	// Metric is the SLO metric the target is about: "wait", "gpu_wait"
	// (the default) or "turnaround", over every video after the warm-up.
	Metric string
	// TargetP95 in seconds: at least 95% of the measured videos (GPU tasks
	// for gpu_wait) within it, counting those still waiting at the end of
	// the run past it as misses. Zero sizes for the classes' SLOs instead
	// (each class's own, or the workload's for a class without any): a
	// size meets when every class meets every one of its SLOs.
	TargetP95 float64
	// Parallel simulations; 0 means GOMAXPROCS.
	Parallel int
	// Progress, when set, is called (from any goroutine, one call at a
	// time) after each simulation with the number done and the total.
	Progress func(done, total int)
}

// SweepPoint is one simulated fleet size.
type SweepPoint struct {
	Count          int     `json:"count"`
	GPUs           int     `json:"gpus"`
	P95            float64 `json:"p95"`      // of the metric, measured videos only
	Attained       float64 `json:"attained"` // fraction within the target, pending misses counted
	Met            bool    `json:"met"`
	GPUUtilisation float64 `json:"gpu_utilisation"`
	CostPerHour    float64 `json:"cost_per_hour"`
	// CostPerRenderedMinute is the fleet's cost over the minutes rendered.
	CostPerRenderedMinute float64 `json:"cost_per_rendered_minute"`
	// P95NoData: no video (GPU task for gpu_wait) of any run reached the
	// metric, so P95 is 0 and says nothing, although pending misses may
	// still make Attained; CostPerRenderedMinuteNoData: no run rendered
	// anything. Such a figure is empty in the CSV and a dash in the table.
	P95NoData                   bool `json:"p95_no_data,omitempty"`
	CostPerRenderedMinuteNoData bool `json:"cost_per_rendered_minute_no_data,omitempty"`
	// With replications the figures above are means over them, CI has
	// their 95% confidence intervals, and Verdict says where the
	// attainment's interval lies: "meets" (wholly at or above the 95% the
	// target asks), "misses" (wholly below) or "uncertain" (across it);
	// Met is then "meets". Verdict is "no data" when nothing was measured
	// against the target (NoData).
	CI      *SweepCI `json:"ci,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	// NoData: no run measured anything against the target (a run too
	// short for any video to finish, say); Met is false and Attained says
	// nothing.
	NoData bool `json:"no_data,omitempty"`
	// Classes, in a sweep by class SLOs, are every class's SLOs at this
	// size (P95 is then of Metric with no target, and Attained unused).
	Classes []ClassSLOs `json:"classes,omitempty"`
}

// ClassSLOs is how one account class fared against its SLOs.
type ClassSLOs struct {
	Name string     `json:"name"`
	SLOs []SLOCheck `json:"slos"`
	// Binding is the index in SLOs of the one with the least margin
	// (attainment minus target): the SLO that decides the size.
	Binding int `json:"binding"`
	// Met: every SLO met (with replications, certainly: verdict "meets").
	Met     bool   `json:"met"`
	Verdict string `json:"verdict,omitempty"`
}

// SLOCheck is one SLO's attainment at one size; CI comes with
// replications (with Runs 1 when one run alone measured it: no interval,
// and the verdict uncertain). Verdict is "no data" when nothing was
// measured against the SLO (NoData), whatever the replications.
type SLOCheck struct {
	SLO
	Attained float64   `json:"attained"`
	Met      bool      `json:"met"`
	CI       *Interval `json:"ci,omitempty"`
	Verdict  string    `json:"verdict,omitempty"`
	NoData   bool      `json:"no_data,omitempty"`
}

// SweepCI are a sweep point's confidence intervals.
type SweepCI struct {
	P95                   Interval `json:"p95"`
	Attained              Interval `json:"attained"`
	GPUUtilisation        Interval `json:"gpu_utilisation"`
	CostPerRenderedMinute Interval `json:"cost_per_rendered_minute"`
}

// Interval is a 95% confidence interval.
type Interval struct {
	Low  float64 `json:"ci_low"`
	High float64 `json:"ci_high"`
	// Runs is, as in Estimate, how many runs measured the figure when
	// fewer than all did; from one there is no interval (Low and High
	// are its value), and the table and CSV say so rather than ± 0.
	Runs int `json:"runs,omitempty"`
}

// oneRun: one run alone measured the figure, so it has no interval.
func (iv Interval) oneRun() bool { return iv.Runs == 1 }

// Sweep verdicts. VerdictNoData is an SLO nothing was measured against
// (its group's videos never reached the metric in the run): it is not
// met, and a size or a fleet with one is not an answer.
const (
	VerdictMeets     = "meets"
	VerdictMisses    = "misses"
	VerdictUncertain = "uncertain"
	VerdictNoData    = "no data"
)

// SweepResult lists every size tried and the answer.
type SweepResult struct {
	// Farm (the fleet's name), Hours and Seed are each simulation's.
	Farm  string  `json:"farm,omitempty"`
	Hours float64 `json:"hours"`
	Seed  uint64  `json:"seed"`
	// Replications per size (seeds Seed, Seed+1, …, the same for every
	// size); absent for one.
	Replications int    `json:"replications,omitempty"`
	Group        string `json:"group"`
	// ByClass: the sweep sizes for every class's SLOs (TargetP95 is 0).
	ByClass   bool         `json:"by_class,omitempty"`
	Metric    string       `json:"metric"`
	TargetP95 float64      `json:"target_p95"`
	Points    []SweepPoint `json:"points"`
	// Smallest is the smallest count from which every larger count tried
	// also meets the target (one lucky size amid failing ones is not an
	// answer a planner can buy); Found is false when the largest fails.
	Smallest int  `json:"smallest"`
	Found    bool `json:"found"`
	// Uncertain, with replications, are the sizes whose interval lies
	// across the target: the sweep cannot tell whether they meet it, so
	// the answer may be as small as the smallest of them. Empty: the
	// answer is certain.
	Uncertain []int `json:"uncertain,omitempty"`
}

// Sweep runs cfg.Replications simulations (at least one) per size of
// sc.Group, all in parallel; replication i has seed cfg.Seed+i for every
// size (common random numbers: sizes differ, arrivals do not).
func Sweep(fleet Fleet, wl Workload, cfg SimConfig, sc SweepConfig) (SweepResult, error) {
	gi := -1
	for i, g := range fleet.Groups {
		if g.Name == sc.Group {
			gi = i
		}
	}
	if sc.Metric == "" {
		sc.Metric = MetricGPUWait
	}
	if sc.Step == 0 {
		sc.Step = 1 // the zero value: unset (the command refuses an explicit 0)
	}
	switch {
	case gi < 0:
		return SweepResult{}, fieldErr("sweep.group", "no node group named %q in the fleet", sc.Group)
	case sc.Min < 1 || sc.Max < sc.Min:
		return SweepResult{}, fieldErr("sweep.min", "need 1 <= min <= max, got min %d max %d", sc.Min, sc.Max)
	case sc.Step < 1:
		return SweepResult{}, fieldErr("sweep.step", "must be >= 1, got %d", sc.Step)
	case cfg.Replications < 0 || cfg.Replications > maxReplications:
		return SweepResult{}, fieldErr("replications", "must be 1 to %d, got %d", maxReplications, cfg.Replications)
	case (sc.Max-sc.Min)/sc.Step+1 > 200:
		return SweepResult{}, fieldErr("sweep.step", "at most 200 sizes per sweep; raise step")
	}
	// The swept group never drops to zero nodes, so the fleet as given
	// has every GPU kind each size has.
	if err := checkInputs(fleet, wl); err != nil {
		return SweepResult{}, err
	}
	byClass := sc.TargetP95 == 0
	if byClass {
		if !hasClassSLOs(wl) {
			return SweepResult{}, fieldErr("sweep.target_p95", "needs a p95 target, or SLOs in the workload for the classes to meet")
		}
		if err := validateSLOs("sweep", []SLO{{Metric: sc.Metric}}); err != nil {
			return SweepResult{}, err
		}
	} else {
		slo := SLO{Metric: sc.Metric, Seconds: sc.TargetP95, Target: 0.95}
		if err := validateSLOs("sweep", []SLO{slo}); err != nil {
			return SweepResult{}, err
		}
		wl.SLOs = append(append([]SLO(nil), wl.SLOs...), slo)
	}
	var counts []int
	for c := sc.Min; c <= sc.Max; c += sc.Step {
		counts = append(counts, c)
	}
	nrep := max(cfg.Replications, 1)
	res := SweepResult{Farm: fleet.Name, Hours: cfg.Hours, Seed: cfg.Seed, Group: sc.Group, Metric: sc.Metric,
		TargetP95: sc.TargetP95, ByClass: byClass, Points: make([]SweepPoint, len(counts))}
	if nrep > 1 {
		res.Replications = nrep
	}
	// One job per size and replication, all on the pool at once.
	reps, errs := make([]SimReport, len(counts)*nrep), make([]error, len(counts)*nrep)
	var (
		mu   sync.Mutex
		done int
	)
	perRun, err := checkVideos(wl, cfg.Hours)
	if err != nil {
		return SweepResult{}, err
	}
	forEach(len(reps), runsAtOnce(perRun, sc.Parallel), func(j int) {
		i, r := j/nrep, j%nrep
		f := fleet
		f.Groups = append([]NodeGroup(nil), fleet.Groups...)
		f.Groups[gi].Count = counts[i]
		reps[j], errs[j] = simulateOnce(f, wl, replicaConfig(cfg, r))
		if errs[j] != nil {
			errs[j] = fmt.Errorf("bench: sweep %s=%d seed %d: %w", sc.Group, counts[i], cfg.Seed+uint64(r), errs[j])
		}
		if sc.Progress != nil {
			mu.Lock()
			done++
			sc.Progress(done, len(reps))
			mu.Unlock()
		}
	})
	for _, err := range errs {
		if err != nil {
			return SweepResult{}, err
		}
	}
	for i, c := range counts {
		res.Points[i] = sweepPoint(c, reps[i*nrep:(i+1)*nrep], sc.Metric, byClass)
	}
	for i := len(res.Points) - 1; i >= 0 && res.Points[i].Met; i-- {
		res.Smallest, res.Found = res.Points[i].Count, true
	}
	for _, p := range res.Points {
		if p.Verdict == VerdictUncertain {
			res.Uncertain = append(res.Uncertain, p.Count)
		}
	}
	return res, nil
}

// hasClassSLOs: some account class has SLOs, its own or the workload's.
func hasClassSLOs(wl Workload) bool {
	if len(wl.SLOs) > 0 {
		return true
	}
	for _, c := range wl.Accounts {
		if len(c.SLOs) > 0 {
			return true
		}
	}
	return false
}

// classChecks measures every class of rep (a single run, or combined
// replications with CI) against its SLOs, and says whether all are met:
// the verdict is "meets" when every SLO is (certainly, with
// replications), "misses" when one certainly is not (or, for one run, is
// not), "no data" when, short of that, one was measured on nothing,
// "uncertain" otherwise.
func classChecks(rep SimReport) ([]ClassSLOs, string) {
	est := rep.estimates()
	repl := rep.Replications > 1
	all := VerdictMeets
	out := make([]ClassSLOs, 0, len(rep.Accounts))
	for _, g := range rep.Accounts {
		c := ClassSLOs{Name: g.Name, Met: true, Verdict: VerdictMeets}
		for _, o := range g.SLOs {
			ch := SLOCheck{SLO: o.SLO, Attained: o.Attained, Met: o.Met, Verdict: VerdictMisses}
			switch {
			case o.NoData:
				ch.Verdict, ch.NoData = VerdictNoData, true
			case repl:
				e := est["class/"+g.Name+"/"+sloKey(o.SLO)+"_attained"]
				ch.CI = &Interval{Low: e.CILow, High: e.CIHigh, Runs: e.Runs}
				ch.Verdict = sweepVerdict(e, o.target())
				ch.Met = ch.Verdict == VerdictMeets
			case o.Met:
				ch.Verdict = VerdictMeets
			}
			c.Verdict = worse(c.Verdict, ch.Verdict)
			c.SLOs = append(c.SLOs, ch)
		}
		c.Binding = binding(c.SLOs, c.Verdict)
		c.Met = c.Verdict == VerdictMeets
		all = worse(all, c.Verdict)
		if !repl {
			c.Verdict = ""
		}
		out = append(out, c)
	}
	return out, all
}

// binding is the index of the SLO that decides a class's verdict: the
// least margin (attainment minus target) among those measured. An SLO
// measured on nothing binds unless another certainly misses: nothing says
// it is met, and the way to an answer is a longer run, not more GPUs.
func binding(slos []SLOCheck, classVerdict string) int {
	b, best := 0, math.Inf(1)
	for i, o := range slos {
		m := o.Attained - o.target()
		if o.NoData {
			if classVerdict == VerdictMisses {
				continue
			}
			m = math.Inf(-1)
		}
		if m < best {
			b, best = i, m
		}
	}
	return b
}

// sweepVerdict is verdict in the sweep's words.
func sweepVerdict(e Estimate, target float64) string {
	return map[string]string{SLOMet: VerdictMeets, SLOMissed: VerdictMisses, SLOUncertain: VerdictUncertain}[verdict(e, target)]
}

// worse is the worse of two verdicts: misses, then no data, then
// uncertain, then meets.
func worse(a, b string) string {
	rank := map[string]int{VerdictMeets: 0, VerdictUncertain: 1, VerdictNoData: 2, VerdictMisses: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// sweepPoint summarises one size's replications.
func sweepPoint(count int, reps []SimReport, metric string, byClass bool) SweepPoint {
	rep := reps[0]
	if len(reps) > 1 {
		rep = combine(reps)
	}
	p := SweepPoint{
		Count: count, GPUs: rep.GPUs,
		GPUUtilisation: rep.GPUUtilisation, CostPerHour: rep.Cost / rep.Hours,
		CostPerRenderedMinute: rep.CostPerRenderedMinute, CostPerRenderedMinuteNoData: rep.CostPerRenderedMinuteNoData,
	}
	var o SLOResult
	if byClass {
		var v string
		p.Classes, v = classChecks(rep)
		p.Met = v == VerdictMeets
		if len(reps) > 1 || v == VerdictNoData {
			p.Verdict = v
		}
	} else {
		o = rep.Overall.SLOs[len(rep.Overall.SLOs)-1] // the sweep's own, appended last
		p.Attained, p.Met, p.NoData = o.Attained, o.Met, o.NoData
		if o.NoData {
			p.Verdict = VerdictNoData
		}
	}
	p95Key := metric + "_p95"
	q := rep.Overall.Turnaround
	switch metric {
	case MetricWait:
		q = rep.Overall.Wait
	case MetricGPUWait:
		q = rep.Overall.GPUWait
	}
	p.P95, p.P95NoData = q.P95, q.NoData
	if len(reps) == 1 {
		return p
	}
	est := rep.estimates()
	iv := func(scope, metric string) Interval {
		e := est[scope+"/"+metric]
		return Interval{Low: e.CILow, High: e.CIHigh, Runs: e.Runs}
	}
	p.CI = &SweepCI{
		P95:                   iv("all/all", p95Key),
		GPUUtilisation:        iv("farm/", "gpu_utilisation"),
		CostPerRenderedMinute: iv("farm/", "cost_per_rendered_minute"),
	}
	if byClass || p.NoData {
		return p
	}
	p.CI.Attained = iv("all/all", sloKey(o.SLO)+"_attained")
	p.Verdict = sweepVerdict(est["all/all/"+sloKey(o.SLO)+"_attained"], o.target())
	p.Met = p.Verdict == VerdictMeets
	return p
}
