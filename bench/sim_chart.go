package bench

import (
	"fmt"
	"io"

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

func percentAxis() chart.YAxis {
	return chart.YAxis{
		Name:           "utilisation",
		Range:          &chart.ContinuousRange{Min: 0, Max: 1},
		ValueFormatter: func(v any) string { return fmt.Sprintf("%.0f%%", 100*v.(float64)) },
	}
}

// WriteSVG draws the report's timeline: GPU-wait p50/p95/p99 (left axis,
// seconds) and GPU and CPU utilisation (right axis, dashed) over simulated
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
		Title:          fmt.Sprintf("%d GPUs, %.0f h simulated (seed %d)", r.GPUs, r.Hours, r.Seed),
		Width:          1100,
		Height:         500,
		Background:     chart.Style{Padding: chart.Box{Top: 50, Left: 20, Right: 20, Bottom: 20}},
		XAxis:          chart.XAxis{Name: "simulated hours"},
		YAxis:          chart.YAxis{Name: "GPU wait, seconds"},
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

// WriteSVG draws the sweep: p95 of the metric (left axis) and GPU
// utilisation (right axis, dashed) against the group's size, with the
// target as a flat line.
func (r SweepResult) WriteSVG(w io.Writer) error {
	n := len(r.Points)
	if n < 2 {
		return fmt.Errorf("bench: a sweep chart needs at least two sizes, got %d", n)
	}
	xs, p95, goal, gpu := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range r.Points {
		xs[i], p95[i], goal[i], gpu[i] = float64(p.Count), p.P95, r.TargetP95, p.GPUUtilisation
	}
	title := fmt.Sprintf("p95 %s against the size of %q: no size tried meets %.0f s", r.Metric, r.Group, r.TargetP95)
	if r.Found {
		title = fmt.Sprintf("p95 %s against the size of %q: %d nodes meet %.0f s", r.Metric, r.Group, r.Smallest, r.TargetP95)
	}
	c := chart.Chart{
		Title:          title,
		Width:          900,
		Height:         480,
		Background:     chart.Style{Padding: chart.Box{Top: 50, Left: 20, Right: 20, Bottom: 20}},
		XAxis:          chart.XAxis{Name: fmt.Sprintf("nodes in group %s", r.Group)},
		YAxis:          chart.YAxis{Name: fmt.Sprintf("p95 %s, seconds", r.Metric)},
		YAxisSecondary: percentAxis(),
		Series: []chart.Series{
			line(fmt.Sprintf("p95 %s (s)", r.Metric), colP95, false, xs, p95),
			line("target (s)", colGoal, false, xs, goal),
			line("GPU utilisation", colGPU, true, xs, gpu),
		},
	}
	c.Elements = []chart.Renderable{chart.LegendThin(&c)}
	return c.Render(chart.SVG, w)
}
