package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
)

// SweepConfig asks for the smallest size of one node group that meets a
// p95 target. Every other input is the fleet, workload and SimConfig given
// to Sweep.
type SweepConfig struct {
	// Group names the node group whose Count varies from Min to Max by Step.
	Group          string
	Min, Max, Step int
	// Metric is the SLO metric the target is about: "wait", "gpu_wait"
	// (the default) or "turnaround", over every video after the warm-up.
	Metric string
	// TargetP95 in seconds: at least 95% of the measured videos (GPU tasks
	// for gpu_wait) within it, counting those still waiting at the end of
	// the run past it as misses.
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
}

// SweepResult lists every size tried and the answer.
type SweepResult struct {
	// Farm (the fleet's name), Hours and Seed are each simulation's.
	Farm      string       `json:"farm,omitempty"`
	Hours     float64      `json:"hours"`
	Seed      uint64       `json:"seed"`
	Group     string       `json:"group"`
	Metric    string       `json:"metric"`
	TargetP95 float64      `json:"target_p95"`
	Points    []SweepPoint `json:"points"`
	// Smallest is the smallest count from which every larger count tried
	// also meets the target (one lucky size amid failing ones is not an
	// answer a planner can buy); Found is false when the largest fails.
	Smallest int  `json:"smallest"`
	Found    bool `json:"found"`
}

// Sweep runs one simulation per size of sc.Group, in parallel, each with
// the same seed (common random numbers: sizes differ, arrivals do not).
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
		sc.Step = 1
	}
	switch {
	case gi < 0:
		return SweepResult{}, fieldErr("sweep.group", "no node group named %q in the fleet", sc.Group)
	case sc.Min < 1 || sc.Max < sc.Min:
		return SweepResult{}, fieldErr("sweep.min", "need 1 <= min <= max, got min %d max %d", sc.Min, sc.Max)
	case sc.Step < 1:
		return SweepResult{}, fieldErr("sweep.step", "must be >= 1, got %d", sc.Step)
	case (sc.Max-sc.Min)/sc.Step+1 > 200:
		return SweepResult{}, fieldErr("sweep.step", "at most 200 sizes per sweep; raise step")
	}
	slo := SLO{Metric: sc.Metric, Seconds: sc.TargetP95, Target: 0.95}
	if err := validateSLOs("sweep", []SLO{slo}); err != nil {
		return SweepResult{}, err
	}
	var counts []int
	for c := sc.Min; c <= sc.Max; c += sc.Step {
		counts = append(counts, c)
	}
	wl.SLOs = append(append([]SLO(nil), wl.SLOs...), slo)
	cfg.Progress = nil
	res := SweepResult{Farm: fleet.Name, Hours: cfg.Hours, Seed: cfg.Seed, Group: sc.Group, Metric: sc.Metric, TargetP95: sc.TargetP95, Points: make([]SweepPoint, len(counts))}
	errs := make([]error, len(counts))
	par := sc.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
		sem  = make(chan struct{}, par)
	)
	for i, c := range counts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f := fleet
			f.Groups = append([]NodeGroup(nil), fleet.Groups...)
			f.Groups[gi].Count = c
			rep, err := Simulate(f, wl, cfg)
			if err != nil {
				errs[i] = fmt.Errorf("bench: sweep %s=%d: %w", sc.Group, c, err)
			} else {
				res.Points[i] = sweepPoint(c, rep, sc.Metric)
			}
			if sc.Progress != nil {
				mu.Lock()
				done++
				sc.Progress(done, len(counts))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return SweepResult{}, err
		}
	}
	for i := len(res.Points) - 1; i >= 0 && res.Points[i].Met; i-- {
		res.Smallest, res.Found = res.Points[i].Count, true
	}
	return res, nil
}

func sweepPoint(count int, rep SimReport, metric string) SweepPoint {
	o := rep.Overall.SLOs[len(rep.Overall.SLOs)-1] // the sweep's own, appended last
	p := SweepPoint{
		Count: count, GPUs: rep.GPUs, Attained: o.Attained, Met: o.Met,
		GPUUtilisation: rep.GPUUtilisation, CostPerHour: rep.Cost / rep.Hours,
		CostPerRenderedMinute: rep.CostPerRenderedMinute,
	}
	switch metric {
	case MetricWait:
		p.P95 = rep.Overall.Wait.P95
	case MetricGPUWait:
		p.P95 = rep.Overall.GPUWait.P95
	default:
		p.P95 = rep.Overall.Turnaround.P95
	}
	return p
}

// String renders the sweep as a table with the answer.
func (r SweepResult) String() string {
	s := fmt.Sprintf("sweep of node group %q: p95 %s target %.1f s\n\n%8s %6s %12s %10s %8s %10s %14s\n",
		r.Group, r.Metric, r.TargetP95, "count", "GPUs", "p95 s", "within", "GPU use", "cost/h", "cost/rend. min")
	for _, p := range r.Points {
		mark := ""
		if p.Met {
			mark = "  meets"
		}
		s += fmt.Sprintf("%8d %6d %12.1f %9.2f%% %7.1f%% %10.2f %14.3f%s\n", p.Count, p.GPUs, p.P95, 100*p.Attained,
			100*p.GPUUtilisation, p.CostPerHour, p.CostPerRenderedMinute, mark)
	}
	if r.Found {
		return s + fmt.Sprintf("\nsmallest %s count that meets the target: %d\n", r.Group, r.Smallest)
	}
	return s + fmt.Sprintf("\nno %s count up to the largest tried meets the target\n", r.Group)
}

// WriteCSV writes one row per size tried.
func (r SweepResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"group", "count", "gpus", "metric", "target_p95", "p95", "attained", "met", "gpu_utilisation", "cost_per_hour", "cost_per_rendered_minute"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, p := range r.Points {
		_ = cw.Write([]string{r.Group, strconv.Itoa(p.Count), strconv.Itoa(p.GPUs), r.Metric, f(r.TargetP95), f(p.P95),
			f(p.Attained), strconv.FormatBool(p.Met), f(p.GPUUtilisation), f(p.CostPerHour), f(p.CostPerRenderedMinute)})
	}
	cw.Flush()
	return cw.Error()
}
