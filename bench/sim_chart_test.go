package bench

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct {
		span     float64
		maxTicks int
		want     float64
	}{
		{10, 10, 1},
		{10, 5, 2},
		{10, 4, 5}, // 2.5 rounds up to 5, not down to 2 (that would be 5 intervals)
		{10, 2, 5},
		{10, 1, 10},
		{0.3, 3, 0.1},
		{7, 8, 1},
		{8.33, 8, 2},
		{100, 8, 20},
		{100, 5, 20},
		{10500, 8, 2000}, // the old axis read 5300, 10500 … seconds
		{1e-3, 10, 1e-4},
		{95, 1, 100},
		{0, 5, 1},
		{-3, 5, 1},
		{math.NaN(), 5, 1},
		{math.Inf(1), 5, 1},
		{10, 0, 1},
	} {
		got := niceStep(tc.span, tc.maxTicks)
		if math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tc.span, tc.maxTicks, got, tc.want)
		}
		if tc.span > 0 && tc.maxTicks > 0 && !math.IsInf(tc.span, 0) && tc.span/got > float64(tc.maxTicks)+1e-9 {
			t.Errorf("niceStep(%v, %d) = %v cuts more than %d intervals", tc.span, tc.maxTicks, got, tc.maxTicks)
		}
	}
}

func TestRoundTicksAndUnits(t *testing.T) {
	labels := func(top float64) (string, float64) {
		ticks, end := roundTicks(top, 8, plainLabel)
		var l []string
		for _, tk := range ticks {
			l = append(l, tk.Label)
		}
		return strings.Join(l, " "), end
	}
	for _, tc := range []struct {
		top  float64
		want string
		end  float64
	}{
		{7, "0 1 2 3 4 5 6 7", 7},
		{13.1, "0 2 4 6 8 10 12 14", 14},
		{0.75, "0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8", 0.8},
		{100, "0 20 40 60 80 100", 100},
		{0, "0.0 0.2 0.4 0.6 0.8 1.0", 1}, // no waits at all still makes an axis
	} {
		if got, end := labels(tc.top); got != tc.want || math.Abs(end-tc.end) > 1e-9 {
			t.Errorf("roundTicks(%v) = %q to %v, want %q to %v", tc.top, got, end, tc.want, tc.end)
		}
	}
	for _, tc := range []struct {
		seconds float64
		unit    string
		text    string
	}{
		{45, "seconds", "45 s"},
		{100, "seconds", "100 s"},
		{600, "minutes", "10 min"},
		{90, "seconds", "1.5 min"},
		{5400, "minutes", "1.5 h"},
		{18000, "hours", "5 h"},
	} {
		if u := waitUnit(tc.seconds); u.name != tc.unit {
			t.Errorf("waitUnit(%v) = %s, want %s", tc.seconds, u.name, tc.unit)
		}
		if got := fmtWait(tc.seconds); got != tc.text {
			t.Errorf("fmtWait(%v) = %q, want %q", tc.seconds, got, tc.text)
		}
	}
}

// chartReport is a 12 h timeline whose waits climb to 5 h while the GPUs
// sit at 100%: the peaks the old legend covered.
func chartReport() SimReport {
	r := SimReport{Farm: `R&D <west>`, Hours: 12, Seed: 7, GPUs: 64}
	for i := range 144 {
		h := float64(i) / 12
		peak := max(0, 1-math.Abs(h-8)/4)
		r.Timeline = append(r.Timeline, TimelinePoint{StartHours: h, Hours: 1.0 / 12,
			GPUWaitP50: 600 * peak, GPUWaitP95: 12000 * peak, GPUWaitP99: 18000 * peak,
			GPUUtilisation: min(1, 0.4+peak), CPUUtilisation: 0.1})
	}
	return r
}

// chartSweep is 26 sizes, too many to label each, with a 2 min target.
func chartSweep() SweepResult {
	r := SweepResult{Farm: "west", Hours: 24, Seed: 7, Group: "h100", Metric: MetricGPUWait, TargetP95: 120, Smallest: 30, Found: true}
	for c := 10; c <= 60; c += 2 {
		p95 := 120 * math.Pow(2, float64(30-c)/3)
		r.Points = append(r.Points, SweepPoint{Count: c, GPUs: 8 * c, P95: p95, Met: p95 <= 120, GPUUtilisation: 20 / float64(c)})
	}
	return r
}

// withCI makes r a report of 10 replications whose timeline waits have
// intervals of ±10% (the p99's top stays within the 5 h axis).
func withCI(r SimReport) SimReport {
	r.Replications = 10
	for _, p := range r.Timeline {
		at := strconv.FormatFloat(p.StartHours, 'f', -1, 64)
		for k, v := range map[string]float64{"gpu_wait_p50": p.GPUWaitP50, "gpu_wait_p95": p.GPUWaitP95, "gpu_wait_p99": p.GPUWaitP99 * 0.9} {
			r.CI = append(r.CI, Estimate{Scope: "timeline", Name: at, Metric: k, Mean: v, CILow: 0.9 * v, CIHigh: 1.1 * v})
		}
	}
	return r
}

// sweepWithCI gives each point of r an interval of ±20% of its p95.
func sweepWithCI(r SweepResult) SweepResult {
	r.Replications = 10
	for i := range r.Points {
		p := &r.Points[i]
		p.CI = &SweepCI{P95: Interval{Low: 0.8 * p.P95, High: 1.2 * p.P95}}
		p.Verdict = VerdictMisses
		if p.Met {
			p.Verdict = VerdictMeets
		}
	}
	return r
}

func renderCharts(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, write := range map[string]func(io.Writer) error{
		"timeline":    chartReport().WriteSVG,
		"sweep":       chartSweep().WriteSVG,
		"timeline-ci": withCI(chartReport()).WriteSVG,
		"sweep-ci":    sweepWithCI(chartSweep()).WriteSVG,
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b.Bytes()
	}
	return out
}

// TestChartLayout reads the charts back as XML: the legend lies outside
// the plot and clear of the axes' labels, each swatch beside its label,
// every wait and utilisation tick is a round number, the title names the
// farm and the seed, and the sweep draws its target where the axis says.
func TestChartLayout(t *testing.T) {
	for name, doc := range renderCharts(t) {
		t.Run(name, func(t *testing.T) {
			var root svgElem
			if err := xml.Unmarshal(doc, &root); err != nil {
				t.Fatalf("SVG does not parse: %v", err)
			}
			width, height := root.num(t, "width"), root.num(t, "height")
			plot, ok := root.byID("plot-area")
			if !ok {
				t.Fatal("no plot-area rectangle")
			}
			plotBox := plot.rectBox(t)
			lg, ok := root.byID("legend")
			if !ok {
				t.Fatal("no legend")
			}
			frame, legendBox := checkLegend(t, lg)
			if legendBox.overlaps(plotBox) {
				t.Errorf("legend %v overlaps the plot %v", legendBox, plotBox)
			}
			if frame.x0 < 0 || frame.y0 < 0 || frame.x1 > width || frame.y1 > height {
				t.Errorf("legend frame %v outside the %vx%v image", frame, width, height)
			}
			base, seeds := strings.TrimSuffix(name, "-ci"), "seed 7"
			if base != name {
				seeds = "10 seeds from 7"
				if _, ok := root.byID("ci-bands"); !ok {
					t.Error("no CI bands")
				}
			}
			if title, ok := root.byID("title"); !ok || !strings.Contains(title.Text, seeds) ||
				!strings.Contains(title.Text, map[string]string{"timeline": "R&D <west>", "sweep": "west"}[base]) {
				t.Errorf("title %q, want the farm and %q", title.Text, seeds)
			}

			axes := map[string][]tick{}
			for _, e := range root.Kids {
				if e.XMLName.Local != "text" || e.attr("transform") != "" || e.attr("id") != "" {
					continue
				}
				x, y := e.num(t, "x"), e.num(t, "y")
				if b := textBox(x, y, e.Text); b.overlaps(legendBox) {
					t.Errorf("text %q at %v overlaps the legend %v", e.Text, b, legendBox)
				}
				v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(e.Text, "%"), " h"), 64)
				if err != nil {
					continue // an axis name
				}
				// A y axis' labels sit at their ticks' height (the
				// lowest half a line below the plot), the x axis' a line
				// and more below it.
				switch {
				case y > plotBox.y1+12:
					axes["x"] = append(axes["x"], tick{x, v})
				case x < plotBox.x0:
					axes["left"] = append(axes["left"], tick{y, v})
				case x > plotBox.x1:
					axes["right"] = append(axes["right"], tick{y, v})
				}
			}
			for axis, ticks := range axes {
				// The timeline's hours step by divisors of a day, not 1-2-5.
				checkTicks(t, axis, ticks, !(base == "timeline" && axis == "x"))
			}
			if r := axes["right"]; len(r) == 0 || r[len(r)-1].v != 100 {
				t.Errorf("utilisation axis %v does not end at 100%%", r)
			}
			if l := axes["left"]; base == "timeline" && (len(l) == 0 || l[len(l)-1].v != 5) {
				t.Errorf("wait axis %v: 5 h of p99 should read 0 to 5 (hours)", l)
			}
			if base == "sweep" {
				checkTargetLine(t, root, plotBox, axes["left"])
			}
		})
	}
}

type tick struct{ pos, v float64 }

// checkTicks wants ticks evenly spaced from a multiple of the step, and
// with nice a step of 1, 2 or 5 × 10^k.
func checkTicks(t *testing.T, axis string, ticks []tick, nice bool) {
	t.Helper()
	slices.SortFunc(ticks, func(a, b tick) int { return cmp.Compare(a.v, b.v) })
	if len(ticks) < 3 {
		t.Errorf("%s axis: %d ticks", axis, len(ticks))
		return
	}
	step := ticks[1].v - ticks[0].v
	mant := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	if nice && !slices.ContainsFunc([]float64{1, 2, 5}, func(m float64) bool { return math.Abs(m-mant) < 1e-6 }) {
		t.Errorf("%s axis: step %v is not 1, 2 or 5 × 10^k", axis, step)
	}
	for i, tk := range ticks {
		if r := tk.v / step; math.Abs(r-math.Round(r)) > 1e-6 || (i > 0 && math.Abs(tk.v-ticks[i-1].v-step) > 1e-6) {
			t.Errorf("%s axis: ticks %v are not round multiples of %v", axis, ticks, step)
			return
		}
	}
}

// checkTargetLine finds the dashed horizontal target line and wants it at
// the height of the wait axis' "2" (minutes), with its label on the plot.
func checkTargetLine(t *testing.T, root svgElem, plot box, left []tick) {
	t.Helper()
	tickY := math.NaN()
	for _, tk := range left {
		if tk.v == 2 {
			tickY = tk.pos - 5 // the label's baseline sits half its height below the tick
		}
	}
	found := false
	for _, e := range root.Kids {
		if e.XMLName.Local != "path" || e.attr("stroke-dasharray") != "10.0, 4.0" {
			continue
		}
		f := strings.Fields(strings.NewReplacer("M", " ", "L", " ").Replace(e.attr("d")))
		if len(f) == 4 && f[1] == f[3] {
			y, _ := strconv.ParseFloat(f[1], 64)
			found = math.Abs(y-tickY) <= 3
		}
	}
	if !found {
		t.Errorf("no dashed target line at the 2 min tick (y %v)", tickY)
	}
	for _, e := range root.Kids {
		if e.XMLName.Local == "text" && e.Text == "SLO target 2 min" {
			if x, y := e.num(t, "x"), e.num(t, "y"); x < plot.x0 || x > plot.x1 || y < plot.y0 || y > plot.y1 {
				t.Errorf("target label at %v,%v outside the plot %v", x, y, plot)
			}
			return
		}
	}
	t.Error("no target label")
}

// TestChartsSkipPointsWithoutData: a timeline interval in which no GPU
// task was leased, and a sweep size at which nothing reached the metric,
// have no wait: the wait lines join their neighbours instead of dropping
// to the axis' 0, as though nothing had waited; a line with no point at
// all is left out and its legend entry says so.
func TestChartsSkipPointsWithoutData(t *testing.T) {
	tl := chartReport() // waits of 15 min to 5 h from 5 h to 11 h
	measured := 0
	for i := range tl.Timeline {
		p := &tl.Timeline[i]
		if p.GPUWaitP99 > 0 && i%3 == 0 {
			p.GPUWaitP50, p.GPUWaitP95, p.GPUWaitP99, p.GPUWaitNoData = 0, 0, 0, true
		} else {
			measured++
		}
	}
	sw := chartSweep()
	for i := range sw.Points {
		if i%2 == 0 {
			sw.Points[i].P95, sw.Points[i].P95NoData = 0, true
		}
	}
	empty := chartReport()
	for i := range empty.Timeline {
		empty.Timeline[i] = TimelinePoint{StartHours: empty.Timeline[i].StartHours, Hours: empty.Timeline[i].Hours, GPUWaitNoData: true}
	}
	for _, tc := range []struct {
		name   string
		write  func(io.Writer) error
		colour string
		points int  // the line's, 0 for none
		zeros  bool // measured waits of 0 (chartReport's before 5 h) are on the line
	}{
		{"timeline", tl.WriteSVG, colP99.String(), measured, true},
		{"timeline-ci", withCI(tl).WriteSVG, colP99.String(), measured, true},
		{"sweep", sw.WriteSVG, colP95.String(), len(sw.Points) / 2, false},
		{"sweep-ci", sweepWithCI(sw).WriteSVG, colP95.String(), len(sw.Points) / 2, false},
		{"timeline of no GPU wait", empty.WriteSVG, colP99.String(), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			doc := b.String()
			var root svgElem
			if err := xml.Unmarshal(b.Bytes(), &root); err != nil {
				t.Fatal(err)
			}
			plot, _ := root.byID("plot-area")
			bottom := plot.rectBox(t).y1
			var ys []float64
			for _, e := range root.Kids {
				if e.XMLName.Local != "path" || !strings.Contains(e.attr("style"), "stroke:"+tc.colour) {
					continue
				}
				for _, v := range strings.FieldsFunc(e.attr("d"), func(r rune) bool { return r == 'M' || r == 'L' || r == '\n' }) {
					var x, y float64
					if _, err := fmt.Sscanf(strings.TrimSpace(v), "%g %g", &x, &y); err != nil {
						t.Fatalf("path vertex %q: %v", v, err)
					}
					ys = append(ys, y)
				}
			}
			if len(ys) != tc.points {
				t.Errorf("the line has %d points, want %d", len(ys), tc.points)
			}
			for _, y := range ys {
				if y >= bottom && !tc.zeros {
					t.Errorf("a point at y %v, on the axis' 0 (plot bottom %v)", y, bottom)
				}
			}
			if (tc.points == 0) != strings.Contains(doc, "(no data)") {
				t.Errorf("legend says no data: %v, want %v", !(tc.points == 0), tc.points == 0)
			}
		})
	}
}
