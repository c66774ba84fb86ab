package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// String renders the report as a plain-text table.
func (r SimReport) String() string {
	if r.Replications > 1 {
		return r.replicatedTable()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %s (seed %d): %d nodes, %d GPUs, %d CPU slots\n", spanOf(r.Hours), r.Seed, r.Nodes, r.GPUs, r.CPUSlots)
	fmt.Fprintf(&b, "videos: %.0f submitted, %.0f completed, %.0f in flight at the end\n", r.Submitted, r.Completed, r.InFlight)
	b.WriteString(r.Overload.warning(r.Replications > 1))
	fmt.Fprintf(&b, "throughput %.1f videos/h, %.2f videos per GPU-hour, GPU utilisation %.1f%%, CPU utilisation %.1f%%\n",
		r.ThroughputPerHour, r.VideosPerGPUHour, 100*r.GPUUtilisation, 100*r.CPUUtilisation)
	fmt.Fprintf(&b, "rendered %.1f min for a cost of %.2f%s: %s%s per rendered minute\n", r.RenderedMinutes, r.Cost, r.unit(),
		orDash(!r.CostPerRenderedMinuteNoData, "%.3f", r.CostPerRenderedMinute), r.unit())
	b.WriteString(r.Faults.lines())
	b.WriteString("\n")
	// The wait columns widen to their longest cell: an overloaded farm's
	// waits run to six digits and more, past the header's width.
	wWait, wGPU := 36, 36
	for _, g := range append(append([]GroupStats{r.Overall}, r.Modes...), r.Accounts...) {
		wWait, wGPU = max(wWait, utf8.RuneCountInString(summary(g.Wait))), max(wGPU, utf8.RuneCountInString(summary(g.GPUWait)))
	}
	fmt.Fprintf(&b, "%-18s %9s %9s  %-*s  %-*s  %s\n", "group", "submitted", "completed",
		wWait, "wait s (mean / p50 / p95 / p99)", wGPU, "GPU wait s (mean / p50 / p95 / p99)", "turnaround s (mean / p50 / p95 / p99)")
	var slos strings.Builder
	row := func(kind string, g GroupStats) {
		label := strings.TrimSpace(kind + " " + g.Name)
		fmt.Fprintf(&b, "%-18s %9.0f %9.0f  %-*s  %-*s  %s\n", label, g.Submitted, g.Completed,
			wWait, summary(g.Wait), wGPU, summary(g.GPUWait), summary(g.Turnaround))
		for _, o := range g.SLOs {
			verdict, attained := "MISSED", fmt.Sprintf("%6.2f%%", 100*o.Attained)
			switch {
			case o.NoData:
				verdict, attained = SLONoData, "      —"
			case o.Met:
				verdict = "met"
			}
			fmt.Fprintf(&slos, "%-18s %-10s <= %7.0f s  %s of %-8.0f (target %.2f%%)  %s\n", label, o.Metric, o.Seconds,
				attained, o.Count, 100*o.Target, verdict)
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
	b.WriteString(r.classCostTable())
	return b.String()
}

// spanOf writes a run's length in hours, "48.0 h", or in minutes or
// seconds when under a tenth of an hour, which "0.0 h" would hide.
func spanOf(hours float64) string {
	if hours >= 0.1 {
		return fmt.Sprintf("%.1f h", hours)
	}
	return time.Duration(hours * float64(time.Hour)).Round(time.Millisecond).String()
}

// warning is the table's line on an overloaded farm (none for nil).
func (o *Overload) warning(mean bool) string {
	if o == nil {
		return ""
	}
	n := fmt.Sprintf("%.0f", o.NotStarted)
	if mean {
		n = fmt.Sprintf("%.1f", o.NotStarted) + " a run"
	}
	return fmt.Sprintf("WARNING: the farm is overloaded: %s videos (%.1f%% of those submitted) had not started at the end;\n"+
		"         the waits and percentiles below cover started videos only and understate what clients saw (SLO attainments count\n"+
		"         the waiting videos past their limit as misses): add nodes or lower the rate\n", n, 100*o.Share)
}

// lines are the table's lines on faults and cold starts (none for nil).
func (f *FaultStats) lines() string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf("faults: nodes up %.2f%% of the time, %.0f node failures, %.0f agent restarts, %.0f tasks requeued, %.1f GPU-hours lost\n"+
		"models: %.0f cold starts, %.1f GPU-hours loading, %s%% of %.0f GPU placements on a node with the model warm\n",
		100*f.NodeAvailability, f.NodeFailures, f.AgentRestarts, f.TasksRequeued, f.GPUHoursLost,
		f.ColdStarts, f.LoadGPUHours, orDash(!f.WarmHitShareNoData, "%.1f", 100*f.WarmHitShare), f.GPUPlacements)
}

// orDash formats v, or is a dash when it was measured on nothing
// (measured false): a cost per minute of nothing rendered is no number,
// and 0 would read as free.
func orDash(measured bool, format string, v float64) string {
	if !measured {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

// unit is " USD" for a fleet priced in USD, "" for one without a currency.
func (r SimReport) unit() string { return currencySuffix(r.Currency) }

func currencySuffix(c string) string {
	if c == "" {
		return ""
	}
	return " " + c
}

// classCostTable is the cost by class section (empty without ClassCosts).
func (r SimReport) classCostTable() string {
	if len(r.ClassCosts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\ncost by class (the fleet's %.2f%s split by GPU-seconds used)\n%-18s %12s %7s %12s %10s %14s %14s\n",
		r.Cost, r.unit(), "class", "GPU-hours", "share", "cost", "videos", "per video", "per rend. min")
	est := r.estimates()
	for _, c := range r.ClassCosts {
		// With replications Videos is a mean: 0.4 is not "0" beside a
		// cost per video.
		videos := meanCount(est["class/"+c.Name+"/cost_completed"], 0)
		if r.Replications <= 1 {
			videos = fmt.Sprintf("%.0f", c.Videos)
		}
		fmt.Fprintf(&b, "%-18s %12.1f %6.1f%% %12.2f %10s %14s %14s\n", "class "+c.Name, c.GPUSeconds/3600, 100*c.Share,
			c.Cost, videos, orDash(c.Videos > 0, "%.3f", c.CostPerVideo), orDash(c.RenderedMinutes > 0, "%.3f", c.CostPerRenderedMinute))
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
// hours). A spreadsheet pivot or pandas turns it into any table. With
// replications each row also has ci_low,ci_high, the 95% confidence
// interval of the mean in value (empty for what the inputs fix, such as
// the GPU count, and for an SLO's met and verdict), counts are means, an
// SLO's met is 1 only when its attainment's interval lies wholly at or
// above the target, and a verdict row follows it with the table's
// verdict (met, missed, uncertain, no data), so that an uncertain SLO is
// not read as missed either.
// A figure measured on nothing has an empty value (and, with
// replications, interval): an SLO's attainment (its met is 0: not met),
// a group's waits and percentiles when it has no sample, a timeline
// interval's GPU wait when no GPU task was leased in it, the cost per
// rendered minute (overall or a class's) when nothing was rendered, the
// cost per video of a class that completed none, the warm-hit share
// without GPU placements. With replications that is when no run measured
// it; otherwise value and interval are over the runs that did, and from
// one run there is a value and no interval (empty ci_low, ci_high).
func (r SimReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	repl := r.Replications > 1
	head := []string{"scope", "name", "metric", "value"}
	if repl {
		head = append(head, "ci_low", "ci_high")
	}
	_ = cw.Write(head)
	est := r.estimates()
	for _, f := range r.figures() {
		if f.hidden {
			continue
		}
		row := []string{f.scope, f.name, f.metric, num(f.value())}
		if f.empty() {
			row[3] = "" // measured on nothing: no number
		}
		if repl {
			if e, ok := est[f.scope+"/"+f.name+"/"+f.metric]; ok {
				row = append(row[:3], num(e.Mean), num(e.CILow), num(e.CIHigh))
				if e.oneRun() {
					row[4], row[5] = "", "" // one run: no interval
				}
			} else {
				row = append(row, "", "")
			}
		}
		_ = cw.Write(row)
		if repl && f.slo != nil {
			_ = cw.Write([]string{f.scope, f.name, strings.TrimSuffix(f.metric, "_met") + "_verdict", f.slo.Verdict, "", ""})
		}
	}
	if r.Currency != "" {
		pad := func(row []string) []string {
			if repl {
				row = append(row, "", "")
			}
			return row
		}
		_ = cw.Write(pad([]string{"farm", "", "currency", r.Currency}))
		for _, c := range r.ClassCosts {
			for _, m := range []struct {
				k  string
				v  float64
				ok bool // measured on something
			}{{"cost", c.Cost, true}, {"cost_per_video", c.CostPerVideo, c.Videos > 0},
				{"cost_per_rendered_minute", c.CostPerRenderedMinute, c.RenderedMinutes > 0}} {
				v := ""
				if m.ok {
					v = num(m.v)
				}
				_ = cw.Write(pad([]string{"class", c.Name, m.k, v}))
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
