package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mix writes counts as "h100 2, l40s 3, a10 0".
func (r OptimizeResult) mix(counts []int) string {
	s := make([]string, len(counts))
	for i, n := range counts {
		s[i] = fmt.Sprintf("%s %d", r.Groups[i].Name, n)
	}
	return strings.Join(s, ", ")
}

// String renders the search: the ranges, every candidate tried in cost
// order with each class's binding SLO, and the answer with its cost per
// hour, per video and per rendered minute by class.
func (r OptimizeResult) String() string {
	var b strings.Builder
	unit := currencySuffix(r.Currency)
	fmt.Fprintf(&b, "cheapest fleet that meets every class's SLOs: %.1f h", r.Hours)
	if r.Replications > 1 {
		fmt.Fprintf(&b, ", %d seeds from %d (verdicts from the 95%% confidence intervals)", r.Replications, r.Seed)
	} else {
		fmt.Fprintf(&b, ", seed %d", r.Seed)
	}
	b.WriteString("\nsearched ")
	for i, g := range r.Groups {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d..%d (%s ×%d, %.2f%s/h)", g.Name, g.Min, g.Max, orCPU(g.GPUModel), g.GPUsPerNode, g.CostPerHour, unit)
	}
	fmt.Fprintf(&b, "\n%d candidate fleets by cost per hour: %d simulated, %d skipped (dominated by one that misses)\n\n",
		r.Candidates, len(r.Tried), r.Skipped)
	var classes []string
	if len(r.Tried) > 0 {
		for _, c := range r.Tried[0].Classes {
			classes = append(classes, c.Name)
		}
	}
	width := make([]int, len(classes))
	mixW := len("mix")
	for _, c := range r.Tried {
		mixW = max(mixW, len(r.mix(c.Counts)))
		for i := range classes {
			width[i] = max(width[i], len([]rune(classes[i])), len([]rune(classCell(c.Classes[i]))))
		}
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", max(0, w-len([]rune(s)))) }
	fmt.Fprintf(&b, "%s  %6s %12s  ", pad("mix", mixW), "GPUs", "cost/h"+unit)
	for i, n := range classes {
		b.WriteString(pad(n, width[i]) + "  ")
	}
	b.WriteString("verdict\n")
	for _, c := range r.Tried {
		fmt.Fprintf(&b, "%s  %6d %12.2f  ", pad(r.mix(c.Counts), mixW), c.GPUs, c.CostPerHour)
		for i := range classes {
			b.WriteString(pad(classCell(c.Classes[i]), width[i]) + "  ")
		}
		b.WriteString(c.Verdict + "\n")
	}
	uncertain := func() {
		if len(r.Uncertain) == 0 {
			return
		}
		s := make([]string, len(r.Uncertain))
		for i, c := range r.Uncertain {
			s[i] = r.mix(c)
		}
		fmt.Fprintf(&b, "cheaper but uncertain (an interval across a target; more replications or hours tell): %s\n", strings.Join(s, "; "))
	}
	noData := 0
	for _, c := range r.Tried {
		if c.Verdict == VerdictNoData {
			noData++
		}
	}
	if noData > 0 {
		fmt.Fprintf(&b, "%d of the fleets tried have no data for an SLO: nothing was measured against it (no video got that far in the run); run longer, or drop an SLO on videos the workload does not make\n", noData)
	}
	if !r.Found {
		if noData > 0 {
			b.WriteString("\nno fleet in the ranges is known to meet every class's SLOs\n")
			uncertain()
			return b.String()
		}
		if len(r.Uncertain) > 0 {
			// Fleets that may meet every SLO were found: the ranges are not
			// what is short, the evidence is.
			b.WriteString("\nno fleet in the ranges is certain to meet every class's SLOs\n")
			uncertain()
			return b.String()
		}
		b.WriteString("\nno fleet in the ranges meets every class's SLOs; raise the maxima\n")
		return b.String()
	}
	best := r.Best
	fmt.Fprintf(&b, "\ncheapest: %s (%d GPUs) at %.2f%s per hour, %s%s per rendered minute overall, GPU utilisation %.1f%%\n",
		r.mix(best.Counts), best.GPUs, best.CostPerHour, unit,
		orDash(!best.CostPerRenderedMinuteNoData, "%.3f", best.CostPerRenderedMinute), unit, 100*best.GPUUtilisation)
	fmt.Fprintf(&b, "%-14s %-28s %7s %12s %14s\n", "class", "binding SLO", "share", "per video", "per rend. min")
	for i, cc := range best.ClassCosts {
		binding := "—"
		if c := best.Classes[i]; len(c.SLOs) > 0 { // the answer meets: every SLO measured
			o := c.SLOs[c.Binding]
			binding = fmt.Sprintf("%s %.2f%%", sloLabel(o.SLO), 100*o.Attained)
		}
		fmt.Fprintf(&b, "%-14s %-28s %6.1f%% %12s %14s\n", cc.Name, binding, 100*cc.Share,
			orDash(cc.Videos > 0, "%.3f", cc.CostPerVideo), orDash(cc.RenderedMinutes > 0, "%.3f", cc.CostPerRenderedMinute))
	}
	b.WriteString("(the fleet's cost is split between the classes by the GPU-seconds they used)\n")
	uncertain()
	return b.String()
}

func orCPU(model string) string {
	if model == "" {
		return "CPU"
	}
	return model
}

// WriteCSV writes one row per candidate tried and class: the counts (a
// column per group), GPUs, cost per hour, the verdict, the class's
// binding SLO and attainment, and its cost per video and per rendered
// minute (empty when it completed or rendered nothing); best is true on
// the answer's rows.
func (r OptimizeResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, g := range r.Groups {
		head = append(head, g.Name)
	}
	head = append(head, "gpus", "cost_per_hour", "currency", "verdict", "best", "class", "binding_metric", "binding_seconds",
		"binding_target", "binding_attained", "class_met", "cost_per_video", "cost_per_rendered_minute")
	_ = cw.Write(head)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for k, c := range r.Tried {
		for i, cl := range c.Classes {
			var row []string
			for _, n := range c.Counts {
				row = append(row, strconv.Itoa(n))
			}
			row = append(row, strconv.Itoa(c.GPUs), f(c.CostPerHour), r.Currency, c.Verdict, strconv.FormatBool(r.Found && k == len(r.Tried)-1), cl.Name)
			if len(cl.SLOs) > 0 {
				o := cl.SLOs[cl.Binding]
				attained := f(o.Attained)
				if o.NoData {
					attained = "" // measured on nothing
				}
				row = append(row, o.Metric, f(o.Seconds), f(o.target()), attained)
			} else {
				row = append(row, "", "", "", "")
			}
			cc := c.ClassCosts[i]
			perVideo, perMinute := "", "" // none completed, nothing rendered: no number
			if cc.Videos > 0 {
				perVideo = f(cc.CostPerVideo)
			}
			if cc.RenderedMinutes > 0 {
				perMinute = f(cc.CostPerRenderedMinute)
			}
			row = append(row, strconv.FormatBool(cl.Met), perVideo, perMinute)
			_ = cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}
