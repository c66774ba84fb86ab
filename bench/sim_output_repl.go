package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
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
	// count is pm for a count's mean, at the precision of its interval
	// and with at least least decimals.
	count := func(scope, name, metric string, least int) string {
		return pm(scope, name, metric, fmt.Sprintf("%%.%df", countDecimals(est[scope+"/"+name+"/"+metric], least)), 1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %s, %d seeds from %d (mean ± half-width of the 95%% confidence interval): %d nodes, %d GPUs, %d CPU slots\n",
		spanOf(r.Hours), r.Replications, r.Seed, r.Nodes, r.GPUs, r.CPUSlots)
	fmt.Fprintf(&b, "videos: %s submitted, %s completed, %s in flight at the end\n",
		count("farm", "", "submitted", 0), count("farm", "", "completed", 0), count("farm", "", "in_flight", 0))
	b.WriteString(r.Overload.warning(true))
	fmt.Fprintf(&b, "throughput %s videos/h, %s videos per GPU-hour, GPU utilisation %s%%, CPU utilisation %s%%\n",
		farm("throughput_per_hour", "%.1f", 1), farm("videos_per_gpu_hour", "%.2f", 1),
		farm("gpu_utilisation", "%.1f", 100), farm("cpu_utilisation", "%.1f", 100))
	fmt.Fprintf(&b, "rendered %s min for a cost of %.2f%s: %s%s per rendered minute\n",
		farm("rendered_minutes", "%.1f", 1), r.Cost, r.unit(), farm("cost_per_rendered_minute", "%.3f", 1), r.unit())
	if r.Faults != nil {
		fmt.Fprintf(&b, "faults: nodes up %s%% of the time, %s node failures, %s agent restarts, %s tasks requeued, %s GPU-hours lost\n",
			farm("node_availability", "%.2f", 100), count("farm", "", "node_failures", 1), count("farm", "", "agent_restarts", 1),
			count("farm", "", "tasks_requeued", 1), farm("gpu_hours_lost", "%.1f", 1))
		fmt.Fprintf(&b, "models: %s cold starts, %s GPU-hours loading, %s%% of GPU placements on a node with the model warm\n",
			count("farm", "", "cold_starts", 1), farm("load_gpu_hours", "%.1f", 1), farm("warm_hit_share", "%.1f", 100))
	}
	b.WriteString("\n")
	// The cells widen to the longest, two spaces clear of the next: an
	// overloaded farm's "112917.2 −3789.9/+2000.1" is past the 18 of a
	// farm that keeps up, and would shift its row out of line.
	wc := 18
	for _, sg := range r.scopedGroups() {
		for _, m := range []string{"wait", "gpu_wait", "turnaround"} {
			for _, q := range []string{"mean", "p50", "p95", "p99"} {
				wc = max(wc, utf8.RuneCountInString(pm(sg.scope, sg.g.Name, m+"_"+q, "%.1f", 1))+2)
			}
		}
	}
	cell := "%-" + strconv.Itoa(wc) + "s"
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
				count(scope, g.Name, "submitted", 0), count(scope, g.Name, "completed", 0))
			if i > 0 {
				lead = strings.Repeat(" ", len([]rune(lead)))
			}
			// A dash when no run measured the group (pm finds no
			// interval).
			cells := make([]string, 4)
			for j, q := range []string{"mean", "p50", "p95", "p99"} {
				cells[j] = pm(scope, g.Name, m.key+"_"+q, "%.1f", 1)
			}
			fmt.Fprintf(&b, "%s %-11s "+cell+" "+cell+" "+cell+" %s\n", lead, m.label, cells[0], cells[1], cells[2], cells[3])
		}
		for _, o := range g.SLOs {
			key := scope + "/" + g.Name + "/" + sloKey(o.SLO)
			e := est[key+"_attained"]
			attained := plusMinus("%6.2f%%", "%5.2f%%", 100*e.Mean, 100*e.CILow, 100*e.CIHigh)
			switch {
			case o.NoData:
				attained = fmt.Sprintf("%16s", "—")
			case e.oneRun():
				attained = fmt.Sprintf("%6.2f%%%-9s", 100*e.Mean, oneRunNote) // as wide as the ±
			}
			v := o.Verdict
			if v == SLOMissed {
				v = "MISSED" // a miss stands out in the table
			}
			fmt.Fprintf(&slos, "%-18s %-10s <= %7.0f s  %s of %-8s (target %.2f%%)  %s\n", label, o.Metric, o.Seconds,
				attained, meanCount(est[key+"_count"], 0), 100*o.Target, v)
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

// countDecimals is how many decimals write e, a count's mean, at the
// precision of its interval, at least least: down to the first
// significant digit of the interval's half-width when that is under 1, so
// that a class with 0.4 ± 0.3 videos a run does not read "0 ± 0" beside
// the waits of its videos. A count is whole in every run: a mean with no
// width (every run the same) is whole, and one over a wider interval
// needs no decimal.
func countDecimals(e Estimate, least int) int {
	h := e.HalfWidth()
	if h <= 0 || h >= 1 {
		return least
	}
	return max(least, min(int(math.Ceil(-math.Log10(h))), 6))
}

// meanCount is a count's mean alone, at the precision of its interval
// (countDecimals): for the sample sizes, whose intervals the table does
// not write.
func meanCount(e Estimate, least int) string {
	return strconv.FormatFloat(e.Mean, 'f', countDecimals(e, least), 64)
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
// target: SLOMet wholly at or above, SLOMissed wholly below, SLOUncertain
// across it (more replications or longer runs narrow the interval), or
// when only one run measured it: one run has no interval.
func verdict(e Estimate, target float64) string {
	switch {
	case e.oneRun():
		return SLOUncertain
	case e.CILow >= target:
		return SLOMet
	case e.CIHigh < target:
		return SLOMissed
	}
	return SLOUncertain
}
