package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// String renders the report as a plain-text table.
func (r SimReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %.1f h (seed %d): %d nodes, %d GPUs, %d CPU slots\n", r.Hours, r.Seed, r.Nodes, r.GPUs, r.CPUSlots)
	fmt.Fprintf(&b, "videos: %d submitted, %d completed, %d in flight at the end\n", r.Submitted, r.Completed, r.InFlight)
	fmt.Fprintf(&b, "throughput %.1f videos/h, %.2f videos per GPU-hour, GPU utilisation %.1f%%, CPU utilisation %.1f%%\n",
		r.ThroughputPerHour, r.VideosPerGPUHour, 100*r.GPUUtilisation, 100*r.CPUUtilisation)
	fmt.Fprintf(&b, "rendered %.1f min for a cost of %.2f: %.3f per rendered minute\n\n", r.RenderedMinutes, r.Cost, r.CostPerRenderedMinute)
	fmt.Fprintf(&b, "%-18s %9s %9s  %-36s  %-36s  %s\n", "group", "submitted", "completed",
		"wait s (mean / p50 / p95 / p99)", "GPU wait s (mean / p50 / p95 / p99)", "turnaround s (mean / p50 / p95 / p99)")
	var slos strings.Builder
	row := func(kind string, g GroupStats) {
		label := strings.TrimSpace(kind + " " + g.Name)
		fmt.Fprintf(&b, "%-18s %9d %9d  %-36s  %-36s  %s\n", label, g.Submitted, g.Completed,
			summary(g.Wait), summary(g.GPUWait), summary(g.Turnaround))
		for _, o := range g.SLOs {
			verdict := "MISSED"
			if o.Met {
				verdict = "met"
			}
			fmt.Fprintf(&slos, "%-18s %-10s <= %7.0f s  %6.2f%% of %-8d (target %.2f%%)  %s\n", label, o.Metric, o.Seconds,
				100*o.Attained, o.Count, 100*o.Target, verdict)
		}
	}
	row("", r.Overall)
	for _, g := range r.Modes {
		row("mode", g)
	}
	for _, g := range r.Accounts {
		row("class", g)
	}
	if slos.Len() > 0 {
		fmt.Fprintf(&b, "\nSLO attainment\n%s", slos.String())
	}
	return b.String()
}

// summary is a table cell: mean / p50 / p95 / p99, or a dash for a group
// with nothing measured, which "0.0 / 0.0 / 0.0" would pass off as
// instant service.
func summary(p Percentiles) string {
	if p.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", p.Mean, p.P50, p.P95, p.P99)
}

// WriteCSV writes the report in long ("tidy") form, one measurement a row:
// scope,name,metric,value. Scope is "farm" (name empty), "all", "mode" or
// "class" (name the group), or "timeline" (name the interval's start in
// hours). A spreadsheet pivot or pandas turns it into any table.
func (r SimReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	put := func(scope, name, metric string, v float64) {
		_ = cw.Write([]string{scope, name, metric, strconv.FormatFloat(v, 'g', 8, 64)})
	}
	_ = cw.Write([]string{"scope", "name", "metric", "value"})
	for _, f := range []struct {
		k string
		v float64
	}{
		{"hours", r.Hours}, {"seed", float64(r.Seed)}, {"nodes", float64(r.Nodes)}, {"gpus", float64(r.GPUs)},
		{"cpu_slots", float64(r.CPUSlots)}, {"submitted", float64(r.Submitted)}, {"completed", float64(r.Completed)},
		{"in_flight", float64(r.InFlight)}, {"gpu_utilisation", r.GPUUtilisation}, {"cpu_utilisation", r.CPUUtilisation},
		{"throughput_per_hour", r.ThroughputPerHour}, {"videos_per_gpu_hour", r.VideosPerGPUHour},
		{"rendered_minutes", r.RenderedMinutes}, {"cost", r.Cost}, {"cost_per_rendered_minute", r.CostPerRenderedMinute},
	} {
		put("farm", "", f.k, f.v)
	}
	group := func(scope string, g GroupStats) {
		put(scope, g.Name, "submitted", float64(g.Submitted))
		put(scope, g.Name, "completed", float64(g.Completed))
		for _, m := range []struct {
			k string
			p Percentiles
		}{{"wait", g.Wait}, {"gpu_wait", g.GPUWait}, {"turnaround", g.Turnaround}} {
			put(scope, g.Name, m.k+"_mean", m.p.Mean)
			put(scope, g.Name, m.k+"_p50", m.p.P50)
			put(scope, g.Name, m.k+"_p95", m.p.P95)
			put(scope, g.Name, m.k+"_p99", m.p.P99)
			put(scope, g.Name, m.k+"_max", m.p.Max)
		}
		for _, o := range g.SLOs {
			met := 0.0
			if o.Met {
				met = 1
			}
			k := fmt.Sprintf("slo_%s_le_%gs", o.Metric, o.Seconds)
			put(scope, g.Name, k+"_attained", o.Attained)
			put(scope, g.Name, k+"_met", met)
		}
	}
	group("all", r.Overall)
	for _, g := range r.Modes {
		group("mode", g)
	}
	for _, g := range r.Accounts {
		group("class", g)
	}
	for _, p := range r.Timeline {
		at := strconv.FormatFloat(p.StartHours, 'f', -1, 64)
		put("timeline", at, "gpu_wait_p50", p.GPUWaitP50)
		put("timeline", at, "gpu_wait_p95", p.GPUWaitP95)
		put("timeline", at, "gpu_wait_p99", p.GPUWaitP99)
		put("timeline", at, "gpu_utilisation", p.GPUUtilisation)
		put("timeline", at, "cpu_utilisation", p.CPUUtilisation)
		put("timeline", at, "completed", float64(p.Completed))
		put("timeline", at, "queued_gpu_tasks", float64(p.QueuedGPUTasks))
	}
	cw.Flush()
	return cw.Error()
}
