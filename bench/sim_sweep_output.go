package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// String renders the sweep as a table with the answer.
func (r SweepResult) String() string {
	if r.ByClass {
		return r.classTable()
	}
	if r.Replications > 1 {
		return r.replicatedTable()
	}
	s := fmt.Sprintf("sweep of node group %q: p95 %s target %.1f s\n\n%8s %6s %12s %10s %8s %10s %14s\n",
		r.Group, r.Metric, r.TargetP95, "count", "GPUs", "p95 s", "within", "GPU use", "cost/h", "cost/rend. min")
	for _, p := range r.Points {
		// A miss is named as a meet is: a blank read as "not judged".
		mark, within := "  "+VerdictMisses, fmt.Sprintf("%9.2f%%", 100*p.Attained)
		switch {
		case p.NoData:
			mark, within = "  "+VerdictNoData, fmt.Sprintf("%10s", "—")
		case p.Met:
			mark = "  " + VerdictMeets
		}
		s += fmt.Sprintf("%8d %6d %12s %s %7.1f%% %10.2f %14s%s\n", p.Count, p.GPUs, orDash(!p.P95NoData, "%.1f", p.P95), within,
			100*p.GPUUtilisation, p.CostPerHour, orDash(!p.CostPerRenderedMinuteNoData, "%.3f", p.CostPerRenderedMinute), mark)
	}
	s += r.noDataNote()
	if r.Found {
		s += fmt.Sprintf("\nsmallest %s count that meets the target: %d\n", r.Group, r.Smallest)
		if r.firstTried() {
			s += fmt.Sprintf("the smallest size tried already meets it: a smaller one may too (lower --sweep-min below %d)\n", r.Smallest)
		}
		return s
	}
	return s + fmt.Sprintf("\nno %s count up to the largest tried meets the target\n", r.Group)
}

// replicatedTable is String with replications: mean ± half-width of the
// 95% interval, each size's verdict, and whether the answer is certain.
func (r SweepResult) replicatedTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep of node group %q: p95 %s target %.1f s, %d seeds from %d (mean ± half-width of the 95%% confidence interval)\n\n",
		r.Group, r.Metric, r.TargetP95, r.Replications, r.Seed)
	pm := func(noData bool, mean float64, iv Interval, meanFormat, halfFormat string, scale float64) string {
		switch {
		case noData:
			return "—"
		case iv.oneRun():
			return fmt.Sprintf(meanFormat, scale*mean) + oneRunNote
		}
		return plusMinus(meanFormat, halfFormat, scale*mean, scale*iv.Low, scale*iv.High)
	}
	// p95, within, GPU use and cost per minute; each column as wide as its
	// widest cell and two spaces clear of the one before: a p95 of
	// "58698.6 ± 3789.9" beside "0.03% −0.03%/+0.06%" read as one cell.
	cells := make([][4]string, len(r.Points))
	width := [4]int{18, 18, 14, 18}
	for i, p := range r.Points {
		cells[i] = [4]string{pm(p.P95NoData, p.P95, p.CI.P95, "%.1f", "%.1f", 1), pm(p.NoData, p.Attained, p.CI.Attained, "%.2f%%", "%.2f%%", 100),
			pm(false, p.GPUUtilisation, p.CI.GPUUtilisation, "%.1f", "%.1f%%", 100),
			pm(p.CostPerRenderedMinuteNoData, p.CostPerRenderedMinute, p.CI.CostPerRenderedMinute, "%.3f", "%.3f", 1)}
		for j, c := range cells[i] {
			width[j] = max(width[j], utf8.RuneCountInString(c)+2)
		}
	}
	fmt.Fprintf(&b, "%8s %6s %*s %*s %*s %10s %*s  %s\n", "count", "GPUs", width[0], "p95 s", width[1], "within", width[2], "GPU use", "cost/h",
		width[3], "cost/rend. min", "verdict")
	for i, p := range r.Points {
		c := cells[i]
		fmt.Fprintf(&b, "%8d %6d %*s %*s %*s %10.2f %*s  %s\n", p.Count, p.GPUs, width[0], c[0], width[1], c[1], width[2], c[2],
			p.CostPerHour, width[3], c[3], p.Verdict)
	}
	b.WriteString(r.noDataNote())
	b.WriteString("\n")
	switch {
	case r.Found:
		fmt.Fprintf(&b, "smallest %s count certain to meet the target: %d\n", r.Group, r.Smallest)
	default:
		fmt.Fprintf(&b, "no %s count up to the largest tried is certain to meet the target\n", r.Group)
	}
	switch {
	case len(r.Uncertain) > 0:
		fmt.Fprintf(&b, "cannot tell whether %s meet%s it (the interval lies across the target): the answer may be as small as %d; more replications or hours narrow the intervals\n",
			joinCounts(r.Uncertain), map[bool]string{true: "s", false: ""}[len(r.Uncertain) == 1], r.Uncertain[0])
	case r.Found && r.firstTried():
		fmt.Fprintf(&b, "the smallest size tried already meets it: a smaller one may too (lower --sweep-min below %d)\n", r.Smallest)
	case r.Found:
		b.WriteString("the answer is certain: every smaller size tried misses with 95% confidence\n")
	}
	return b.String()
}

// noDataNote explains the sizes at which nothing was measured against a
// target, if any: they are no answer, and more GPUs will not make one.
func (r SweepResult) noDataNote() string {
	var sizes []int
	for _, p := range r.Points {
		if p.Verdict == VerdictNoData {
			sizes = append(sizes, p.Count)
		}
	}
	if len(sizes) == 0 {
		return ""
	}
	return fmt.Sprintf("no data at %s: nothing was measured against %s (no video got that far in the run); run longer, or drop an SLO on videos the workload does not make\n",
		joinCounts(sizes), map[bool]string{true: "an SLO", false: "the target"}[r.ByClass])
}

// firstTried is whether the answer is the sweep's first (smallest) size,
// below which nothing was tried.
func (r SweepResult) firstTried() bool {
	return r.Found && len(r.Points) > 0 && r.Points[0].Count == r.Smallest
}

// joinCounts writes counts as "28", "28 and 29" or "27, 28 and 29".
func joinCounts(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = strconv.Itoa(c)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// WriteCSV writes one row per size tried; with replications each figure
// that varies between runs has _ci_low and _ci_high columns, and a
// verdict column says meets, misses, uncertain or no data (attained and
// its interval are then empty, for one run too). A p95 or a cost per
// rendered minute measured on nothing is empty too, with its interval; a
// figure that one run alone measured has its value and no interval.
func (r SweepResult) WriteCSV(w io.Writer) error {
	if r.ByClass {
		return r.writeClassCSV(w)
	}
	cw := csv.NewWriter(w)
	head := []string{"group", "count", "gpus", "metric", "target_p95", "p95", "attained", "met", "gpu_utilisation", "cost_per_hour", "cost_per_rendered_minute"}
	repl := r.Replications > 1
	if repl {
		head = append(head, "p95_ci_low", "p95_ci_high", "attained_ci_low", "attained_ci_high", "gpu_utilisation_ci_low",
			"gpu_utilisation_ci_high", "cost_per_rendered_minute_ci_low", "cost_per_rendered_minute_ci_high", "verdict")
	}
	_ = cw.Write(head)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, p := range r.Points {
		attained, low, high := f(p.Attained), "", ""
		if p.CI != nil && !p.CI.Attained.oneRun() {
			low, high = f(p.CI.Attained.Low), f(p.CI.Attained.High)
		}
		if p.NoData {
			attained, low, high = "", "", "" // measured on nothing
		}
		// or is f of each of vs, or empty cells for a figure measured
		// on nothing.
		or := func(noData bool, vs ...float64) []string {
			out := make([]string, len(vs))
			for i, v := range vs {
				if !noData {
					out[i] = f(v)
				}
			}
			return out
		}
		// ci is an interval's cells: empty from one run, which has none.
		ci := func(noData bool, iv Interval) []string { return or(noData || iv.oneRun(), iv.Low, iv.High) }
		row := []string{r.Group, strconv.Itoa(p.Count), strconv.Itoa(p.GPUs), r.Metric, f(r.TargetP95)}
		row = append(row, or(p.P95NoData, p.P95)...)
		row = append(row, attained, strconv.FormatBool(p.Met), f(p.GPUUtilisation), f(p.CostPerHour))
		row = append(row, or(p.CostPerRenderedMinuteNoData, p.CostPerRenderedMinute)...)
		if repl {
			c := p.CI
			row = append(row, ci(p.P95NoData, c.P95)...)
			row = append(row, low, high, f(c.GPUUtilisation.Low), f(c.GPUUtilisation.High))
			row = append(row, ci(p.CostPerRenderedMinuteNoData, c.CostPerRenderedMinute)...)
			row = append(row, p.Verdict)
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// sloLabel is "gpu_wait ≤ 60 s".
func sloLabel(o SLO) string { return fmt.Sprintf("%s ≤ %g s", o.Metric, o.Seconds) }

// classCell is a class's binding SLO at one size: "gpu_wait ≤ 60 s
// 99.20%" (± the half-width with replications) and a mark when missed, or
// "gpu_wait ≤ 60 s no data".
func classCell(c ClassSLOs) string {
	if len(c.SLOs) == 0 {
		return "no SLO"
	}
	o := c.SLOs[c.Binding]
	var s string
	switch {
	case o.NoData:
		s = sloLabel(o.SLO) + " " + VerdictNoData
	case o.CI != nil && o.CI.oneRun():
		s = fmt.Sprintf("%s %.2f%%%s", sloLabel(o.SLO), 100*o.Attained, oneRunNote)
	case o.CI != nil:
		s = sloLabel(o.SLO) + " " + plusMinus("%.2f%%", "%.2f%%", 100*o.Attained, 100*o.CI.Low, 100*o.CI.High)
	default:
		s = fmt.Sprintf("%s %.2f%%", sloLabel(o.SLO), 100*o.Attained)
	}
	if !c.Met && !o.NoData { // "no data" says it
		s += " ✗"
	}
	return s
}

// classTable is String for a sweep by class SLOs: per size, each class's
// binding SLO (the least margin) and its attainment, and the verdict.
func (r SweepResult) classTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep of node group %q: every class's SLOs", r.Group)
	if r.Replications > 1 {
		fmt.Fprintf(&b, ", %d seeds from %d (mean ± half-width of the 95%% confidence interval)", r.Replications, r.Seed)
	}
	b.WriteString("\nper class: the binding SLO (least margin over its target) and its attainment; ✗ when the class misses one\n\n")
	var classes []string
	if len(r.Points) > 0 {
		for _, c := range r.Points[0].Classes {
			classes = append(classes, c.Name)
		}
	}
	width := make([]int, len(classes))
	for i, n := range classes {
		width[i] = len([]rune(n))
		for _, p := range r.Points {
			width[i] = max(width[i], len([]rune(classCell(p.Classes[i]))))
		}
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", max(0, w-len([]rune(s)))) }
	fmt.Fprintf(&b, "%8s %6s %8s %10s  ", "count", "GPUs", "GPU use", "cost/h")
	for i, n := range classes {
		b.WriteString(pad(n, width[i]) + "  ")
	}
	b.WriteString("verdict\n")
	for _, p := range r.Points {
		fmt.Fprintf(&b, "%8d %6d %7.1f%% %10.2f  ", p.Count, p.GPUs, 100*p.GPUUtilisation, p.CostPerHour)
		for i := range classes {
			b.WriteString(pad(classCell(p.Classes[i]), width[i]) + "  ")
		}
		v := p.Verdict
		if v == "" {
			v = map[bool]string{true: VerdictMeets, false: VerdictMisses}[p.Met]
		}
		b.WriteString(v + "\n")
	}
	b.WriteString(r.noDataNote())
	b.WriteString("\n")
	certain := ""
	if r.Replications > 1 {
		certain = " certainly"
	}
	if !r.Found {
		fmt.Fprintf(&b, "no %s count up to the largest tried%s meets every class's SLOs\n", r.Group, certain)
	} else {
		fmt.Fprintf(&b, "smallest %s count at which every class%s meets every SLO: %d\n", r.Group, certain, r.Smallest)
		for _, p := range r.Points {
			if p.Count != r.Smallest {
				continue
			}
			for _, c := range p.Classes {
				if len(c.SLOs) == 0 {
					continue
				}
				o := c.SLOs[c.Binding]
				fmt.Fprintf(&b, "  class %s: binding %s (%.2f%% against a target of %.2f%%)\n", c.Name, sloLabel(o.SLO), 100*o.Attained, 100*o.target())
			}
		}
		if r.firstTried() {
			fmt.Fprintf(&b, "the smallest size tried already meets them: a smaller one may too (lower --sweep-min below %d)\n", r.Smallest)
		}
	}
	if len(r.Uncertain) > 0 {
		fmt.Fprintf(&b, "cannot tell whether %s meet%s them (an interval lies across a target): the answer may be as small as %d; more replications or hours narrow the intervals\n",
			joinCounts(r.Uncertain), map[bool]string{true: "s", false: ""}[len(r.Uncertain) == 1], r.Uncertain[0])
	}
	return b.String()
}

// writeClassCSV writes a sweep by class SLOs: one row per size, class and
// SLO; binding marks each class's binding SLO, met its verdict for one
// run, verdict (with replications) meets, misses, uncertain or no data
// (attained and its interval are then empty).
func (r SweepResult) writeClassCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	repl := r.Replications > 1
	head := []string{"group", "count", "gpus", "gpu_utilisation", "cost_per_hour", "class", "metric", "seconds", "target", "attained", "met", "binding"}
	if repl {
		head = append(head, "attained_ci_low", "attained_ci_high", "verdict")
	}
	_ = cw.Write(head)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, p := range r.Points {
		for _, c := range p.Classes {
			for i, o := range c.SLOs {
				attained, low, high := f(o.Attained), "", ""
				if o.CI != nil && !o.CI.oneRun() {
					low, high = f(o.CI.Low), f(o.CI.High)
				}
				if o.NoData {
					attained = "" // measured on nothing
				}
				row := []string{r.Group, strconv.Itoa(p.Count), strconv.Itoa(p.GPUs), f(p.GPUUtilisation), f(p.CostPerHour), c.Name,
					o.Metric, f(o.Seconds), f(o.target()), attained, strconv.FormatBool(o.Met), strconv.FormatBool(i == c.Binding)}
				if repl {
					row = append(row, low, high, o.Verdict)
				}
				_ = cw.Write(row)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
