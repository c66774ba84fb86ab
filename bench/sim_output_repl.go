package bench

import (
	"fmt"
	"strings"
)

// replicatedTable is String for a report of several replications: each
// figure as mean ± the half-width of its 95% confidence interval, one row
// per group and measure so the cells stay readable.
func (r SimReport) replicatedTable() string {
	est := r.estimates()
	// pm is the figure scope/name/metric as "mean ± half" in format (one
	// verb, used for both), times scale; a dash for a figure without an
	// interval, one no run measured.
	pm := func(scope, name, metric, format string, scale float64) string {
		e, ok := est[scope+"/"+name+"/"+metric]
		switch {
		case !ok:
			return "—"
		case e.oneRun():
			return fmt.Sprintf(format, scale*e.Mean) + oneRunNote
		}
		return plusMinus(format, format, scale*e.Mean, scale*e.CILow, scale*e.CIHigh)
	}
	farm := func(metric, format string, scale float64) string { return pm("farm", "", metric, format, scale) }
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %.1f h, %d seeds from %d (mean ± half-width of the 95%% confidence interval): %d nodes, %d GPUs, %d CPU slots\n",
		r.Hours, r.Replications, r.Seed, r.Nodes, r.GPUs, r.CPUSlots)
	fmt.Fprintf(&b, "videos: %s submitted, %s completed, %s in flight at the end\n",
		farm("submitted", "%.0f", 1), farm("completed", "%.0f", 1), farm("in_flight", "%.0f", 1))
	fmt.Fprintf(&b, "throughput %s videos/h, %s videos per GPU-hour, GPU utilisation %s%%, CPU utilisation %s%%\n",
		farm("throughput_per_hour", "%.1f", 1), farm("videos_per_gpu_hour", "%.2f", 1),
		farm("gpu_utilisation", "%.1f", 100), farm("cpu_utilisation", "%.1f", 100))
	fmt.Fprintf(&b, "rendered %s min for a cost of %.2f%s: %s%s per rendered minute\n",
		farm("rendered_minutes", "%.1f", 1), r.Cost, r.unit(), farm("cost_per_rendered_minute", "%.3f", 1), r.unit())
	if r.Faults != nil {
		fmt.Fprintf(&b, "faults: nodes up %s%% of the time, %s node failures, %s agent restarts, %s tasks requeued, %s GPU-hours lost\n",
			farm("node_availability", "%.2f", 100), farm("node_failures", "%.1f", 1), farm("agent_restarts", "%.1f", 1),
			farm("tasks_requeued", "%.1f", 1), farm("gpu_hours_lost", "%.1f", 1))
		fmt.Fprintf(&b, "models: %s cold starts, %s GPU-hours loading, %s%% of GPU placements on a node with the model warm\n",
			farm("cold_starts", "%.1f", 1), farm("load_gpu_hours", "%.1f", 1), farm("warm_hit_share", "%.1f", 100))
	}
	b.WriteString("\n")
	const cell = "%-18s"
	fmt.Fprintf(&b, "%-18s %-15s %-15s %-11s "+cell+" "+cell+" "+cell+" %s\n",
		"group", "submitted", "completed", "measure", "mean s", "p50 s", "p95 s", "p99 s")
	var slos strings.Builder
	row := func(scope string, g GroupStats) {
		label := strings.TrimSpace(map[string]string{"all": "", "mode": "mode", "class": "class"}[scope] + " " + g.Name)
		for i, m := range []struct {
			label, key string
			p          Percentiles
		}{{"wait", "wait", g.Wait}, {"GPU wait", "gpu_wait", g.GPUWait}, {"turnaround", "turnaround", g.Turnaround}} {
			lead := fmt.Sprintf("%-18s %-15s %-15s", label,
				pm(scope, g.Name, "submitted", "%.0f", 1), pm(scope, g.Name, "completed", "%.0f", 1))
			if i > 0 {
				lead = strings.Repeat(" ", len([]rune(lead)))
			}
			// A dash when no run measured the group (pm finds no
			// interval): its mean count may round to 0 while a run did.
			cells := make([]string, 4)
			for j, q := range []string{"mean", "p50", "p95", "p99"} {
				cells[j] = pm(scope, g.Name, m.key+"_"+q, "%.1f", 1)
			}
			fmt.Fprintf(&b, "%s %-11s "+cell+" "+cell+" "+cell+" %s\n", lead, m.label, cells[0], cells[1], cells[2], cells[3])
		}
		for _, o := range g.SLOs {
			e := est[scope+"/"+g.Name+"/"+sloKey(o.SLO)+"_attained"]
			attained, v := plusMinus("%6.2f%%", "%5.2f%%", 100*e.Mean, 100*e.CILow, 100*e.CIHigh), verdict(e, o.target())
			switch {
			case o.NoData:
				attained, v = fmt.Sprintf("%16s", "—"), sloNoData
			case e.oneRun():
				attained = fmt.Sprintf("%6.2f%%%-9s", 100*e.Mean, oneRunNote) // as wide as the ±
			}
			fmt.Fprintf(&slos, "%-18s %-10s <= %7.0f s  %s of %-8d (target %.2f%%)  %s\n", label, o.Metric, o.Seconds,
				attained, o.Count, 100*o.Target, v)
		}
	}
	row("all", r.Overall)
	for _, g := range r.Modes {
		row("mode", g)
	}
	for _, g := range r.Accounts {
		row("class", g)
	}
	if slos.Len() > 0 {
		fmt.Fprintf(&b, "\nSLO attainment (met or MISSED when the whole interval is on one side of the target)\n%s", slos.String())
	}
	b.WriteString(r.classCostTable())
	return b.String()
}

// oneRunNote follows a mean that only one run measured, in place of an
// interval (Estimate.Runs).
const oneRunNote = " (1 run)"

// plusMinus writes a mean and its 95% interval, the mean in meanFormat
// and the distances to the bounds in halfFormat: "97.50% ±  1.20%" when
// the interval is symmetric about the mean, as Student's t is, and
// "99.60% −1.30%/+0.40%" when it is not, as one cut at a bound is
// (cutInterval: a proportion's to [0, 1], any other figure's at 0): a ±
// would draw it past 100% or below 0.
func plusMinus(meanFormat, halfFormat string, mean, lo, hi float64) string {
	m := fmt.Sprintf(meanFormat, mean)
	below, above := fmt.Sprintf(halfFormat, mean-lo), fmt.Sprintf(halfFormat, hi-mean)
	if below == above {
		return m + " ± " + below
	}
	return m + " −" + strings.TrimSpace(below) + "/+" + strings.TrimSpace(above)
}

// verdict says where an attainment's confidence interval lies against its
// target: "met" wholly at or above, "MISSED" wholly below, "uncertain"
// across it (more replications or longer runs narrow the interval), or
// when only one run measured it: one run has no interval.
func verdict(e Estimate, target float64) string {
	switch {
	case e.oneRun():
		return "uncertain"
	case e.CILow >= target:
		return "met"
	case e.CIHigh < target:
		return "MISSED"
	}
	return "uncertain"
}
