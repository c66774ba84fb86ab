package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Charts are drawn with go-chart: line series on two y axes, SVG out, no
// cgo and no browser. Waits go on the left axis (go-chart's secondary), in
// seconds, minutes or hours by their range; utilisation dashed on the
// right; the legend right of everything (sim_chart_layout.go).

var (
	colP50  = drawing.ColorFromHex("4c78a8")
	colP95  = drawing.ColorFromHex("f58518")
	colP99  = drawing.ColorFromHex("e45756")
	colGPU  = drawing.ColorFromHex("54a24b")
	colCPU  = drawing.ColorFromHex("b279a2")
	colGoal = drawing.ColorFromHex("222222")
)

// dashUtilisation and dashTarget tell utilisation (a fraction, right axis)
// and the SLO target apart from the waits at a glance.
var (
	dashUtilisation = []float64{5, 3}
	dashTarget      = []float64{10, 4}
)

func line(name string, c drawing.Color, dash []float64, axis chart.YAxisType, xs, ys []float64) chart.ContinuousSeries {
	return chart.ContinuousSeries{Name: name, XValues: xs, YValues: ys, YAxis: axis,
		Style: chart.Style{StrokeColor: c, StrokeWidth: 2, StrokeDashArray: dash}}
}

// farmName is the farm as the titles call it.
func farmName(name string) string {
	if name == "" {
		return "farm"
	}
	return name
}

func fmtHours(h float64) string { return strconv.FormatFloat(h, 'f', -1, 64) + " h" }

// WriteSVG draws the report's timeline: GPU-wait p50/p95/p99 (left axis)
// and GPU and CPU utilisation (right axis, dashed) over simulated hours.
// An interval in which no GPU task was leased (in any run) has no GPU
// wait: the wait lines skip it, joining the intervals either side, rather
// than dropping to 0 as though nothing had waited.
func (r SimReport) WriteSVG(w io.Writer) error {
	n := len(r.Timeline)
	if n == 0 {
		return fmt.Errorf("bench: the report has no timeline to chart")
	}
	var measured []TimelinePoint // the intervals with a GPU wait
	top := 0.0
	for _, p := range r.Timeline {
		if !p.GPUWaitNoData {
			measured = append(measured, p)
			top = max(top, p.GPUWaitP99)
		}
	}
	// With replications each wait line has a band: its interval at each
	// interval of the run that has one.
	var bands []band
	if r.Replications > 1 && len(measured) > 0 {
		est := r.estimates()
		for _, q := range []struct {
			key string
			c   drawing.Color
		}{{"gpu_wait_p50", colP50}, {"gpu_wait_p95", colP95}, {"gpu_wait_p99", colP99}} {
			bd := band{colour: q.c}
			for _, p := range measured {
				e := est["timeline/"+strconv.FormatFloat(p.StartHours, 'f', -1, 64)+"/"+q.key]
				bd.xs = append(bd.xs, p.StartHours+p.Hours/2)
				bd.lo, bd.hi = append(bd.lo, e.CILow), append(bd.hi, e.CIHigh)
				top = max(top, e.CIHigh)
			}
			bands = append(bands, bd)
		}
	}
	waitY, unit, axisTop := waitAxis("GPU wait", top)
	for _, bd := range bands {
		for i := range bd.lo {
			bd.lo[i], bd.hi[i] = bd.lo[i]/unit.seconds, bd.hi[i]/unit.seconds
		}
	}
	xs := make([]float64, n)
	gpu, cpu := make([]float64, n), make([]float64, n)
	for i, p := range r.Timeline {
		xs[i] = p.StartHours + p.Hours/2
		gpu[i], cpu[i] = p.GPUUtilisation, p.CPUUtilisation
	}
	var wxs, p50, p95, p99 []float64
	for _, p := range measured {
		wxs = append(wxs, p.StartHours+p.Hours/2)
		p50, p95, p99 = append(p50, p.GPUWaitP50/unit.seconds), append(p95, p.GPUWaitP95/unit.seconds), append(p99, p.GPUWaitP99/unit.seconds)
	}
	wait := func(name string, c drawing.Color, ys []float64) chart.ContinuousSeries {
		if len(wxs) == 0 {
			// No GPU task leased in the whole run: go-chart wants a value
			// in every series, so one it does not draw, and the legend
			// says why the line is missing.
			s := line(name+" (no data)", c, nil, chart.YAxisSecondary, xs[:1], []float64{0})
			s.Style.Hidden = true
			return s
		}
		return line(name, c, nil, chart.YAxisSecondary, wxs, ys)
	}
	series := []chart.Series{
		wait("GPU wait p50", colP50, p50),
		wait("GPU wait p95", colP95, p95),
		wait("GPU wait p99", colP99, p99),
		line("GPU utilisation", colGPU, dashUtilisation, chart.YAxisPrimary, xs, gpu),
		line("CPU utilisation", colCPU, dashUtilisation, chart.YAxisPrimary, xs, cpu),
	}
	lg, err := seriesLegend(series, bands, r.Replications)
	if err != nil {
		return err
	}
	c := chart.Chart{
		Width:          1200,
		Height:         560,
		Background:     chart.Style{Padding: chart.Box{Top: 50, Left: plotPadLeft, Right: lg.reserve(), Bottom: 20}},
		XAxis:          chart.XAxis{Name: "simulated time", Range: newFittedRange(0, r.Hours, hourTicks(r.Hours))},
		YAxis:          percentAxis(),
		YAxisSecondary: waitY,
		Series:         series,
	}
	title := fmt.Sprintf("%s: GPU wait and utilisation, %s simulated, %s", farmName(r.Farm)+fmt.Sprintf(" (%d GPUs)", r.GPUs),
		fmtHours(r.Hours), seedsLabel(r.Seed, r.Replications))
	var extra func(chart.Box) string
	if len(bands) > 0 {
		extra = func(plot chart.Box) string { return plotScale{0, r.Hours, axisTop}.svg(plot, bands) }
	}
	return renderWithLegend(w, c, title, lg, extra)
}

// metricLabel names a sweep metric in words.
var metricLabel = map[string]string{MetricWait: "wait", MetricGPUWait: "GPU wait", MetricTurnaround: "turnaround"}

// sweepChartSpan is how many times the target the sweep chart's wait axis
// shows at least: an undersized fleet's p95 can be hours, and drawn to
// scale it would flatten the region around the target, so larger values
// are drawn at the axis' top.
const sweepChartSpan = 5

// WriteSVG draws the sweep: p95 of the metric (left axis) and GPU
// utilisation (right axis, dashed) against the group's size, with the
// target as a dashed line.
func (r SweepResult) WriteSVG(w io.Writer) error {
	n := len(r.Points)
	if n < 2 {
		return fmt.Errorf("bench: a sweep chart needs at least two sizes, got %d", n)
	}
	if r.ByClass {
		return errors.New("bench: a sweep by class SLOs has no chart; give a p95 target for one")
	}
	metric := metricLabel[r.Metric]
	waitY, unit, top := waitAxis("p95 "+metric, sweepChartSpan*r.TargetP95)
	target := r.TargetP95 / unit.seconds
	xs, gpu := make([]float64, n), make([]float64, n)
	// The p95 line skips the sizes at which nothing reached the metric
	// (P95NoData), as the timeline's wait lines skip intervals: 0 there
	// would be the best p95 of the sweep.
	var pxs, p95 []float64
	name := "p95 " + metric
	for i, p := range r.Points {
		xs[i], gpu[i] = float64(p.Count), p.GPUUtilisation
		if p.P95NoData {
			continue
		}
		pxs, p95 = append(pxs, xs[i]), append(p95, min(p.P95/unit.seconds, top))
		if p.P95/unit.seconds > top {
			name = fmt.Sprintf("p95 %s, clipped at %s", metric, fmtWait(top*unit.seconds))
		}
	}
	first, last := xs[0], xs[n-1]
	var bands []band
	if r.Replications > 1 && len(pxs) > 0 {
		bd := band{colour: colP95, xs: pxs}
		for _, p := range r.Points {
			if p.CI != nil && !p.P95NoData {
				bd.lo, bd.hi = append(bd.lo, p.CI.P95.Low/unit.seconds), append(bd.hi, p.CI.P95.High/unit.seconds)
			}
		}
		if len(bd.lo) == len(pxs) {
			bands = append(bands, bd)
		}
	}
	p95Line := line(name, colP95, nil, chart.YAxisSecondary, pxs, p95)
	if len(pxs) == 0 {
		// go-chart wants a value in every series: one it does not draw.
		p95Line = line(name+" (no data)", colP95, nil, chart.YAxisSecondary, xs[:1], []float64{0})
		p95Line.Style.Hidden = true
	}
	goal := fmt.Sprintf("target: p95 ≤ %s", fmtWait(r.TargetP95))
	series := []chart.Series{
		p95Line,
		line(goal, colGoal, dashTarget, chart.YAxisSecondary, []float64{first, last}, []float64{target, target}),
		line("GPU utilisation", colGPU, dashUtilisation, chart.YAxisPrimary, xs, gpu),
	}
	lg, err := seriesLegend(series, bands, r.Replications)
	if err != nil {
		return err
	}
	answer := fmt.Sprintf("no size tried meets %s", fmtWait(r.TargetP95))
	if r.Found {
		answer = fmt.Sprintf("smallest meeting %s: %d", fmtWait(r.TargetP95), r.Smallest)
		if r.Replications > 1 {
			answer = fmt.Sprintf("smallest certain to meet %s: %d", fmtWait(r.TargetP95), r.Smallest)
		}
	}
	names := sweepAxisNames(fmt.Sprintf("nodes in group %s (%s", r.Group, answer), r.Uncertain)
	c := chart.Chart{
		Width:      1100,
		Height:     560,
		Background: chart.Style{Padding: chart.Box{Top: 50, Left: plotPadLeft, Right: lg.reserve(), Bottom: 20}},
		XAxis: chart.XAxis{Name: xmlEscape(names[0]),
			Range: newFittedRange(first, last, countTicks(r.Points))},
		YAxis:          percentAxis(),
		YAxisSecondary: waitY,
		Series:         series,
	}
	// A long list of uncertain sizes ran past the image's edges: the name
	// is the longest that fits the plot go-chart lays out.
	plot, err := plotBox(c)
	if err != nil {
		return err
	}
	axisName, err := fitXName(plot, c.Width, names)
	if err != nil {
		return err
	}
	c.XAxis.Name = xmlEscape(axisName)
	// The target line is named on the plot too, at its right end where an
	// adequate fleet's p95 lies far below it.
	label := func(plot chart.Box) string {
		y := plot.Bottom - int(target/top*float64(plot.Height()))
		return plotScale{first, last, top}.svg(plot, bands) +
			fmt.Sprintf(`<text x="%d" y="%d" text-anchor="end" %s fill="%s">SLO target %s</text>`,
				plot.Right-6, y-6, fontAttrs(legendFontPoints), colGoal.String(), xmlEscape(fmtWait(r.TargetP95)))
	}
	title := fmt.Sprintf("%s: p95 %s against %s nodes, %s simulated, %s",
		farmName(r.Farm), metric, r.Group, fmtHours(r.Hours), seedsLabel(r.Seed, r.Replications))
	return renderWithLegend(w, c, title, lg, label)
}

// sweepAxisNames are the choices of the sweep chart's x-axis name, from
// head (the group and the answer, its parenthesis open), longest first:
// every uncertain size, then the first few of them, an ellipsis, the last
// and how many there are ("uncertain: 5, 6, …, 29 (25 sizes)"), down to
// the count alone (fitXName picks one).
func sweepAxisNames(head string, uncertain []int) []string {
	if len(uncertain) == 0 {
		return []string{head + ")"}
	}
	names := []string{head + "; uncertain: " + joinCounts(uncertain) + ")"}
	last := uncertain[len(uncertain)-1]
	for k := len(uncertain) - 2; k >= 1; k-- {
		shown := make([]string, k)
		for i, c := range uncertain[:k] {
			shown[i] = strconv.Itoa(c)
		}
		names = append(names, fmt.Sprintf("%s; uncertain: %s, …, %d (%d sizes))", head, strings.Join(shown, ", "), last, len(uncertain)))
	}
	return append(names, fmt.Sprintf("%s; %d sizes uncertain)", head, len(uncertain)))
}

// countTicks are the choices of ticks for a sweep's size axis, densest
// first: every size tried when there are at most 13, then round counts
// (multiples of a 1-2-5 step, at most 12 intervals, then ever sparser)
// within the range, and last the first and last size alone.
func countTicks(points []SweepPoint) [][]chart.Tick {
	var out [][]chart.Tick
	tick := func(c int) chart.Tick { return chart.Tick{Value: float64(c), Label: strconv.Itoa(c)} }
	if len(points) <= 13 {
		var ticks []chart.Tick
		for _, p := range points {
			ticks = append(ticks, tick(p.Count))
		}
		out = append(out, ticks)
	}
	lo, hi := points[0].Count, points[len(points)-1].Count
	for step := max(1, int(niceStep(float64(hi-lo), 12))); step <= hi-lo; step = nextNiceStep(step) {
		var ticks []chart.Tick
		for c := (lo + step - 1) / step * step; c <= hi; c += step {
			ticks = append(ticks, tick(c))
		}
		if len(ticks) < 2 {
			break
		}
		if len(out) == 0 || !slices.Equal(out[len(out)-1], ticks) {
			out = append(out, ticks)
		}
	}
	return append(out, []chart.Tick{tick(lo), tick(hi)})
}

// nextNiceStep is the 1-2-5 step after step: 1, 2, 5, 10, 20, 50 …
func nextNiceStep(step int) int {
	mag := 1
	for mag*10 <= step {
		mag *= 10
	}
	switch step / mag {
	case 1:
		return 2 * mag
	case 2:
		return 5 * mag
	}
	return 10 * mag
}
