package bench

import (
	"fmt"
	"math"
	"strconv"
)

// figure is one number of a report, named as its CSV row: the CSV writes
// them, and replications average them (sim_repl.go).
type figure struct {
	scope, name, metric string
	// One of these points at the number.
	f *float64
	i *int
	u *uint64
	b *bool // derived from other figures: never averaged
	// fixed figures follow from the inputs (hours, seed, sizes, cost) and
	// are the same in every replication: not averaged, no CI.
	fixed bool
	// hidden figures (sample sizes) are averaged but not in the CSV.
	hidden bool
	// noData, when set, is the report's flag that says the figure was
	// measured on nothing and has no value (an SLO's attainment of
	// nothing, the p95 of a class with no video finished): the CSV leaves
	// it empty and replications average only the runs that measured
	// something, as a zero would read as instant service or a free
	// render. A run's report sets it; combine sets it when no run
	// measured the figure.
	noData *bool
	// unit figures are proportions, in [0, 1]: their intervals are cut to
	// it; every other figure's at 0 below (sim_repl.go).
	unit bool
	// slo is the SLO an SLO's met figure is of: with replications the CSV
	// follows that row with the SLO's verdict.
	slo *SLOResult
}

// empty: the figure was measured on nothing.
func (f figure) empty() bool { return f.noData != nil && *f.noData }

// top is the largest value the figure can take: 1 for a proportion, no
// bound for the others. Every figure is at least 0: counts, durations,
// rates, shares and costs (TestFiguresAreNotNegative).
func (f figure) top() float64 {
	if f.unit {
		return 1
	}
	return math.Inf(1)
}

// measuredOn makes f a figure of a possibly empty sample, whose emptiness
// the report says in noData.
func (f *figure) measuredOn(noData *bool) { f.noData = noData }

func (f figure) value() float64 {
	switch {
	case f.f != nil:
		return *f.f
	case f.i != nil:
		return float64(*f.i)
	case f.u != nil:
		return float64(*f.u)
	case f.b != nil && *f.b:
		return 1
	}
	return 0
}

// set stores a mean over runs. Only float figures are averaged: a count
// rounded to a whole number would say 0 for a class with 0.4 videos a run
// while its interval and the waits of its videos say otherwise. The ints
// are the inputs' sizes, fixed, and never set.
func (f figure) set(v float64) {
	if f.f == nil {
		panic(fmt.Sprintf("bench: figure %s/%s/%s is averaged but not a float64", f.scope, f.name, f.metric))
	}
	*f.f = v
}

// figures lists every number of r in CSV order, pointing into r.
func (r *SimReport) figures() []figure {
	var fs []figure
	add := func(scope, name, metric string, p any) *figure {
		f := figure{scope: scope, name: name, metric: metric}
		switch v := p.(type) {
		case *float64:
			f.f = v
		case *int:
			f.i = v
		case *uint64:
			f.u = v
		case *bool:
			f.b = v
		default:
			panic(fmt.Sprintf("bench: figure of type %T", p))
		}
		fs = append(fs, f)
		return &fs[len(fs)-1]
	}
	fixed := func(scope, metric string, p any) { add(scope, "", metric, p).fixed = true }
	fixed("farm", "hours", &r.Hours)
	fixed("farm", "seed", &r.Seed)
	fixed("farm", "nodes", &r.Nodes)
	fixed("farm", "gpus", &r.GPUs)
	fixed("farm", "cpu_slots", &r.CPUSlots)
	add("farm", "", "submitted", &r.Submitted)
	add("farm", "", "completed", &r.Completed)
	add("farm", "", "in_flight", &r.InFlight)
	add("farm", "", "gpu_utilisation", &r.GPUUtilisation).unit = true
	add("farm", "", "cpu_utilisation", &r.CPUUtilisation).unit = true
	add("farm", "", "throughput_per_hour", &r.ThroughputPerHour)
	add("farm", "", "videos_per_gpu_hour", &r.VideosPerGPUHour)
	add("farm", "", "rendered_minutes", &r.RenderedMinutes)
	fixed("farm", "cost", &r.Cost)
	// Nothing rendered: the cost per minute is no number (not 0, the
	// cheapest farm of all). Every completed video rendered some minutes.
	//
	// With replications it is, like every figure, the mean of the runs'
	// own ratios (cost over minutes rendered) with Student's t over them:
	// each run's ratio is one independent observation, the replication/
	// deletion estimator whose interval is honest without more theory. A
	// ratio of sums (total cost over total minutes) would weight runs by
	// their minutes and need a delta-method or jackknife interval; the
	// cost of a run is fixed by the fleet and the hours, so it differs
	// from the mean of ratios only by the spread of the minutes (Jensen:
	// the mean of ratios is at least cost over mean minutes, by about
	// their squared coefficient of variation, 10⁻⁵ on the example farm).
	// A run that rendered nothing has no ratio and is left out, as for
	// any figure measured on nothing, where a ratio of sums would still
	// charge its cost. docs/capacity-planning.md says which it is.
	add("farm", "", "cost_per_rendered_minute", &r.CostPerRenderedMinute).measuredOn(&r.CostPerRenderedMinuteNoData)
	if f := r.Faults; f != nil {
		add("farm", "", "node_availability", &f.NodeAvailability).unit = true
		add("farm", "", "node_failures", &f.NodeFailures)
		add("farm", "", "agent_restarts", &f.AgentRestarts)
		add("farm", "", "gpu_hours_lost", &f.GPUHoursLost)
		add("farm", "", "tasks_requeued", &f.TasksRequeued)
		add("farm", "", "cold_starts", &f.ColdStarts)
		add("farm", "", "load_gpu_hours", &f.LoadGPUHours)
		add("farm", "", "gpu_placements", &f.GPUPlacements)
		w := add("farm", "", "warm_hit_share", &f.WarmHitShare)
		w.unit = true
		w.measuredOn(&f.WarmHitShareNoData)
	}
	group := func(scope string, g *GroupStats) {
		add(scope, g.Name, "submitted", &g.Submitted)
		add(scope, g.Name, "completed", &g.Completed)
		for _, m := range []struct {
			k string
			p *Percentiles
		}{{"wait", &g.Wait}, {"gpu_wait", &g.GPUWait}, {"turnaround", &g.Turnaround}} {
			add(scope, g.Name, m.k+"_count", &m.p.Count).hidden = true
			for _, q := range []struct {
				k string
				v *float64
			}{{"_mean", &m.p.Mean}, {"_p50", &m.p.P50}, {"_p95", &m.p.P95}, {"_p99", &m.p.P99}, {"_max", &m.p.Max}} {
				add(scope, g.Name, m.k+q.k, q.v).measuredOn(&m.p.NoData)
			}
		}
		for i := range g.SLOs {
			o := &g.SLOs[i]
			k := sloKey(o.SLO)
			add(scope, g.Name, k+"_count", &o.Count).hidden = true
			a := add(scope, g.Name, k+"_attained", &o.Attained)
			a.unit = true
			a.measuredOn(&o.NoData)
			add(scope, g.Name, k+"_met", &o.Met).slo = o
		}
	}
	group("all", &r.Overall)
	for i := range r.Modes {
		group("mode", &r.Modes[i])
	}
	for i := range r.Accounts {
		g := &r.Accounts[i]
		group("class", g)
		add("class", g.Name, "cost_gpu_seconds", &g.gpuSeconds).hidden = true
		add("class", g.Name, "cost_completed", &g.completedAll).hidden = true
		add("class", g.Name, "cost_rendered_minutes", &g.renderedMinutes).hidden = true
	}
	for i := range r.Timeline {
		p := &r.Timeline[i]
		at := strconv.FormatFloat(p.StartHours, 'f', -1, 64)
		// An interval in which no GPU task was leased has no GPU wait
		// (its GPUs may all have been busy with long renders, the queue
		// full), not a wait of 0.
		add("timeline", at, "gpu_wait_p50", &p.GPUWaitP50).measuredOn(&p.GPUWaitNoData)
		add("timeline", at, "gpu_wait_p95", &p.GPUWaitP95).measuredOn(&p.GPUWaitNoData)
		add("timeline", at, "gpu_wait_p99", &p.GPUWaitP99).measuredOn(&p.GPUWaitNoData)
		add("timeline", at, "gpu_utilisation", &p.GPUUtilisation).unit = true
		add("timeline", at, "cpu_utilisation", &p.CPUUtilisation).unit = true
		add("timeline", at, "completed", &p.Completed)
		add("timeline", at, "queued_gpu_tasks", &p.QueuedGPUTasks)
	}
	return fs
}

// sloKey names an SLO's figures: slo_<metric>_le_<seconds>s.
func sloKey(o SLO) string { return fmt.Sprintf("slo_%s_le_%gs", o.Metric, o.Seconds) }
