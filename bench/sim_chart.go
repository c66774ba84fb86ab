package bench

import (
	"fmt"
	"io"
	"strconv"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Charts are drawn with go-chart: line series on two y axes, SVG out, no
// cgo and no browser. Its one weakness here (no axis titles beside the
// secondary axis) is met by naming the unit in every series.

var (
	colP50  = drawing.ColorFromHex("4c78a8")
	colP95  = drawing.ColorFromHex("f58518")
	colP99  = drawing.ColorFromHex("e45756")
	colGPU  = drawing.ColorFromHex("54a24b")
	colCPU  = drawing.ColorFromHex("b279a2")
	colGoal = drawing.ColorFromHex("222222")
)

func line(name string, c drawing.Color, secondary bool, xs, ys []float64) chart.ContinuousSeries {
	s := chart.ContinuousSeries{Name: name, XValues: xs, YValues: ys, Style: chart.Style{StrokeColor: c, StrokeWidth: 2}}
	if secondary {
		s.YAxis = chart.YAxisSecondary
		s.Style.StrokeDashArray = []float64{5, 3}
	}
	return s
}

func fmtFloat(format string) func(any) string {
	return func(v any) string { return fmt.Sprintf(format, v.(float64)) }
}

func percentAxis() chart.YAxis {
	return chart.YAxis{
		Name:           "utilisation",
		Range:          &chart.ContinuousRange{Min: 0, Max: 1},
		ValueFormatter: func(v any) string { return fmt.Sprintf("%.0f%%", 100*v.(float64)) },
	}
}

// WriteSVG draws the report's timeline: GPU-wait p50/p95/p99 (right axis,
// seconds) and GPU and CPU utilisation (left axis, dashed) over simulated
// hours.
func (r SimReport) WriteSVG(w io.Writer) error {
	n := len(r.Timeline)
	if n == 0 {
		return fmt.Errorf("bench: the report has no timeline to chart")
	}
	xs := make([]float64, n)
	p50, p95, p99 := make([]float64, n), make([]float64, n), make([]float64, n)
	gpu, cpu := make([]float64, n), make([]float64, n)
	for i, p := range r.Timeline {
		xs[i] = p.StartHours + p.Hours/2
		p50[i], p95[i], p99[i] = p.GPUWaitP50, p.GPUWaitP95, p.GPUWaitP99
		gpu[i], cpu[i] = p.GPUUtilisation, p.CPUUtilisation
	}
	c := chart.Chart{
		Width:      1100,
		Height:     500,
		Background: chart.Style{Padding: chart.Box{Top: 50, Left: 20, Right: 20, Bottom: 20}},
		XAxis: chart.XAxis{
			Name:  fmt.Sprintf("simulated hours (%d GPUs, seed %d)", r.GPUs, r.Seed),
			Ticks: hourTicks(r.Hours),
		},
		YAxis:          chart.YAxis{Name: "GPU wait, seconds", ValueFormatter: fmtFloat("%.0f")},
		YAxisSecondary: percentAxis(),
		Series: []chart.Series{
			line("GPU wait p50 (s)", colP50, false, xs, p50),
			line("GPU wait p95 (s)", colP95, false, xs, p95),
			line("GPU wait p99 (s)", colP99, false, xs, p99),
			line("GPU utilisation", colGPU, true, xs, gpu),
			line("CPU utilisation", colCPU, true, xs, cpu),
		},
	}
	c.Elements = []chart.Renderable{chart.LegendThin(&c)}
	return c.Render(chart.SVG, w)
}

// hourTicks labels the time axis every 1, 2, 3, 6, 12 or 24 h (or whole
// days beyond), at most 16 ticks.
func hourTicks(hours float64) []chart.Tick {
	step := 24.0
	for _, s := range []float64{1, 2, 3, 6, 12, 24} {
		if hours/s <= 16 {
			step = s
			break
		}
	}
	for hours/step > 16 {
		step += 24
	}
	var ticks []chart.Tick
	for h := 0.0; h <= hours+1e-9; h += step {
		ticks = append(ticks, chart.Tick{Value: h, Label: fmt.Sprintf("%.0f h", h)})
	}
	return ticks
}

// sweepChartSpan is how many times the target the sweep chart's wait axis
// shows: an undersized fleet's p95 can be hours, and drawn to scale it
// would flatten the region around the target, so larger values are drawn
// at the top.
const sweepChartSpan = 5

// WriteSVG draws the sweep: p95 of the metric (right axis) and GPU
// utilisation (left axis, dashed) against the group's size, with the
// target as a flat line.
func (r SweepResult) WriteSVG(w io.Writer) error {
	n := len(r.Points)
	if n < 2 {
		return fmt.Errorf("bench: a sweep chart needs at least two sizes, got %d", n)
	}
	top := sweepChartSpan * r.TargetP95
	xs, p95, goal, gpu := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	var ticks []chart.Tick
	every := (n + 15) / 16
	for i, p := range r.Points {
		xs[i], p95[i], goal[i], gpu[i] = float64(p.Count), min(p.P95, top), r.TargetP95, p.GPUUtilisation
		if i%every == 0 || i == n-1 {
			ticks = append(ticks, chart.Tick{Value: xs[i], Label: strconv.Itoa(p.Count)})
		}
	}
	answer := fmt.Sprintf("no size tried meets %.0f s", r.TargetP95)
	if r.Found {
		answer = fmt.Sprintf("smallest meeting %.0f s: %d", r.TargetP95, r.Smallest)
	}
	c := chart.Chart{
		Width:      900,
		Height:     480,
		Background: chart.Style{Padding: chart.Box{Top: 50, Left: 20, Right: 20, Bottom: 20}},
		XAxis:      chart.XAxis{Name: fmt.Sprintf("nodes in group %s (%s)", r.Group, answer), Ticks: ticks},
		YAxis: chart.YAxis{Name: fmt.Sprintf("p95 %s, seconds", r.Metric), ValueFormatter: fmtFloat("%.0f"),
			Range: &chart.ContinuousRange{Min: 0, Max: top}},
		YAxisSecondary: percentAxis(),
		Series: []chart.Series{
			line(fmt.Sprintf("p95 %s (s, drawn at most %.0f)", r.Metric, top), colP95, false, xs, p95),
			line("target (s)", colGoal, false, xs, goal),
			line("GPU utilisation", colGPU, true, xs, gpu),
		},
	}
	c.Elements = []chart.Renderable{chart.LegendThin(&c)}
	return c.Render(chart.SVG, w)
}
