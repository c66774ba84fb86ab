package bench

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	chart "github.com/wcharczuk/go-chart/v2"
)

// Axis labels read back from a chart: the x axis' labels must not overlap
// one another, and no axis' name may overlap that axis' labels, in a
// viewer whose font is not known (textBox's 0.6 em a character).

const axisFontPx = 12.8

// axisText is an axis label or name as drawn: its x and y, text, and for a
// name the angle it is turned by.
type axisText struct {
	x, y   float64
	text   string
	rotate float64
}

// readAxes sorts a chart's text into the x axis' labels (the row nearest
// below the plot), the left and right axes' labels, the axes' names
// (turned text), each in order of position, and the x axis' name and the
// chart's title (x their start and centre: go-chart starts the name at
// x, the title is centred on it).
func readAxes(t *testing.T, doc []byte) (x, left, right, names []axisText, xName, title axisText, width float64) {
	t.Helper()
	var root svgElem
	if err := xml.Unmarshal(doc, &root); err != nil {
		t.Fatalf("SVG does not parse: %v", err)
	}
	p, ok := root.byID("plot-area")
	if !ok {
		t.Fatal("no plot-area rectangle")
	}
	plot := p.rectBox(t)
	var below []axisText
	for _, e := range root.Kids {
		if e.XMLName.Local != "text" {
			continue
		}
		if e.attr("id") == "title" {
			title = axisText{x: e.num(t, "x"), y: e.num(t, "y"), text: e.Text}
			continue
		}
		a := axisText{x: e.num(t, "x"), y: e.num(t, "y"), text: e.Text}
		if tr := e.attr("transform"); tr != "" {
			if _, err := fmt.Sscanf(tr, "rotate(%g", &a.rotate); err != nil {
				t.Fatalf("transform %q: %v", tr, err)
			}
			names = append(names, a)
			continue
		}
		switch {
		case e.attr("id") != "":
		case a.y > plot.y1+12:
			below = append(below, a)
		case a.x < plot.x0:
			left = append(left, a)
		case a.x > plot.x1:
			right = append(right, a)
		}
	}
	row := math.Inf(1)
	for _, a := range below {
		row = min(row, a.y)
	}
	for _, a := range below {
		switch {
		case a.y == row:
			x = append(x, a)
		case a.y > xName.y:
			xName = a
		}
	}
	slices.SortFunc(x, func(a, b axisText) int { return cmp.Compare(a.x, b.x) })
	return x, left, right, names, xName, title, root.num(t, "width")
}

// checkAxes wants at least minX labels on the x axis, each starting at
// least its own width and a quarter em after the one before starts, all
// inside the image, the x axis' name and the chart's title inside the
// image too, and every axis name clear of its axis' labels: a name turned
// by 90° has its letters on the right of its baseline, so the left axis'
// must end before the left labels begin, and the right axis' must begin
// after the right labels end.
func checkAxes(t *testing.T, name string, doc []byte, minX int) {
	t.Helper()
	x, left, right, names, xName, title, width := readAxes(t, doc)
	if xName.text == "" {
		t.Errorf("%s: no x-axis name", name)
	} else if b := textBox(xName.x, xName.y, xName.text); b.x0 < 0 || b.x1 > width {
		t.Errorf("%s: x-axis name %q at %.0f–%.0f runs past the %v px image", name, xName.text, b.x0, b.x1, width)
	}
	// The title's font is 14 pt, where textBox's is 9.6 pt (12.8 px).
	if half := textBox(0, 0, title.text).x1 * 14 / 9.6 / 2; title.x-half < 0 || title.x+half > width {
		t.Errorf("%s: title %q at %.0f–%.0f runs past the %v px image", name, title.text, title.x-half, title.x+half, width)
	}
	if len(x) < minX {
		t.Errorf("%s: %d x-axis labels %v, want at least %d", name, len(x), x, minX)
	}
	for i, l := range x {
		b := textBox(l.x, l.y, l.text)
		if b.x0 < 0 || b.x1 > width {
			t.Errorf("%s: x label %q at %v–%v is outside the %v px image", name, l.text, b.x0, b.x1, width)
		}
		if i == 0 {
			continue
		}
		prev := x[i-1]
		if need := textBox(prev.x, prev.y, prev.text).x1 - prev.x + axisFontPx/4; l.x-prev.x < need {
			t.Errorf("%s: x labels %q at %v and %q at %v are %.0f px apart, want at least %.0f", name, prev.text, prev.x, l.text, l.x, l.x-prev.x, need)
			return
		}
	}
	if len(left) == 0 || len(right) == 0 || len(names) < 2 {
		t.Fatalf("%s: %d left labels, %d right labels, %d axis names", name, len(left), len(right), len(names))
	}
	leftmost, rightmost := math.Inf(1), math.Inf(-1)
	for _, l := range left {
		leftmost = min(leftmost, l.x)
	}
	for _, l := range right {
		rightmost = max(rightmost, textBox(l.x, l.y, l.text).x1)
	}
	for _, n := range names {
		if n.rotate != 90 {
			t.Errorf("%s: axis name %q turned by %v°, want 90", name, n.text, n.rotate)
			continue
		}
		// Turned by 90°, the letters rise to the right of the baseline
		// (0.8 em at most) and descend left of it (0.3 em).
		x0, x1 := n.x-0.3*axisFontPx, n.x+0.8*axisFontPx
		switch {
		case x0 < 0:
			t.Errorf("%s: axis name %q starts at %v, outside the image", name, n.text, x0)
		case n.x < leftmost && x1 > leftmost:
			t.Errorf("%s: left axis name %q reaches x %.1f, over the axis' labels from x %v", name, n.text, x1, leftmost)
		case n.x > leftmost && x0 < rightmost:
			t.Errorf("%s: right axis name %q starts at x %.1f, over the axis' labels to x %.1f", name, n.text, x0, rightmost)
		}
	}
}

// TestChartAxisLabelsDoNotOverlap draws the charts over the ranges the
// command line can produce (runs of minutes to a year; sweeps of 2 to 200
// sizes of up to 100,000 nodes, with targets whose legend labels narrow
// the plot) and wants their axis labels apart (checkAxes).
func TestChartAxisLabelsDoNotOverlap(t *testing.T) {
	for name, doc := range renderCharts(t) {
		checkAxes(t, name, doc, 3)
	}
	for _, hours := range []float64{0.05, 0.5, 1.5, 2, 7.5, 16, 17, 48, 168, 385, 1000, 2160, 5000, 8759, 8760} {
		for _, repl := range []int{1, 10} {
			r := SimReport{Farm: "f", Hours: hours, Seed: 1, GPUs: 8, Replications: repl}
			tl := newTimeline(hoursDur(hours))
			r.Timeline = tl.points(8, 8)
			for i := range r.Timeline {
				r.Timeline[i].GPUWaitP99 = 3600 * hours // hours of wait: the axis in hours
			}
			var b bytes.Buffer
			if err := r.WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			checkAxes(t, fmt.Sprintf("timeline of %v h, %d seeds", hours, repl), b.Bytes(), 2)
		}
	}
	for _, sr := range []struct{ min, step, n int }{
		{99988, 1, 13}, {1, 1000, 13}, {3, 8333, 13}, {9990, 1, 11}, {98, 1, 3}, {1, 1, 2},
		{1, 7, 14}, {1, 1, 200}, {99000, 5, 200}, {99801, 1, 200}, {90000, 50, 200},
	} {
		for _, target := range []float64{1e-6, 120, 7 * 86400} {
			// The x axis' name lists the sizes the sweep cannot tell
			// apart from the answer: none, a few, or every size but the
			// last, the answer (uncertain up to 199 sizes of 6 digits).
			for _, uncertain := range []int{0, 3, sr.n - 1} {
				r := SweepResult{Farm: "f", Hours: 24, Seed: 1, Group: "g", Metric: MetricTurnaround, TargetP95: target, Replications: 1000,
					Found: true, Smallest: sr.min + (sr.n-1)*sr.step}
				for i := range sr.n {
					// From far over the target down: the legend's longest
					// label, "clipped at".
					p := SweepPoint{Count: sr.min + i*sr.step, P95: target * 100 / float64(i+1)}
					p.CI = &SweepCI{P95: Interval{Low: p.P95 * 0.9, High: p.P95 * 1.1}}
					r.Points = append(r.Points, p)
					if i >= sr.n-1-uncertain && i < sr.n-1 {
						r.Uncertain = append(r.Uncertain, p.Count)
					}
				}
				var b bytes.Buffer
				if err := r.WriteSVG(&b); err != nil {
					t.Fatal(err)
				}
				checkAxes(t, fmt.Sprintf("sweep %d..%d step %d, target %v s, %d uncertain", sr.min, sr.min+(sr.n-1)*sr.step, sr.step, target, uncertain),
					b.Bytes(), 2)
			}
		}
	}
	// Farm and group names come from the user's files, of any length.
	long := strings.Repeat("a very long name ", 12)
	sw := chartSweep()
	sw.Farm, sw.Group = long, long
	tl := chartReport()
	tl.Farm = long
	for name, write := range map[string]func(io.Writer) error{"sweep of long names": sw.WriteSVG, "timeline of a long name": tl.WriteSVG} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		checkAxes(t, name, b.Bytes(), 2)
	}
}

// TestAxisTickChoices: the time axis steps through minutes for short
// runs, divisors of a day, then days; the size axis through every size
// tried, 1-2-5 steps, and the two ends; each list from the densest.
func TestAxisTickChoices(t *testing.T) {
	for _, tc := range []struct {
		hours       float64
		first, last string
	}{
		{0.01, "0 min", "0 min"}, // under a minute: its start
		{0.05, "0 min 1 min 2 min 3 min", "0 min 2 min"},
		{1.5, "0 min 10 min 20 min 30 min 40 min 50 min 60 min 70 min 80 min 90 min", "0 h 1 h"},
		{2, "0 h 1 h 2 h", "0 h 2 h"},
		{48, "0 h 3 h 6 h 9 h 12 h 15 h 18 h 21 h 24 h 27 h 30 h 33 h 36 h 39 h 42 h 45 h 48 h", "0 h 48 h"},
		{8760, "0 h 720 h 1440 h 2160 h 2880 h 3600 h 4320 h 5040 h 5760 h 6480 h 7200 h 7920 h 8640 h", "0 h 8760 h"},
	} {
		got := tickLabels(hourTicks(tc.hours))
		if got[0] != tc.first || got[len(got)-1] != tc.last {
			t.Errorf("hourTicks(%v) = %q … %q, want %q … %q", tc.hours, got[0], got[len(got)-1], tc.first, tc.last)
		}
	}
	for _, tc := range []struct {
		min, step, n int
		want         []string
	}{
		{3, 1, 5, []string{"3 4 5 6 7", "4 6", "3 7"}},
		{10, 2, 26, []string{"10 15 20 25 30 35 40 45 50 55 60", "10 20 30 40 50 60", "20 40 60", "10 60"}},
		{99988, 1, 13, []string{"99988 99989 99990 99991 99992 99993 99994 99995 99996 99997 99998 99999 100000",
			"99988 99990 99992 99994 99996 99998 100000", "99990 99995 100000", "99990 100000", "99988 100000"}},
	} {
		var points []SweepPoint
		for i := range tc.n {
			points = append(points, SweepPoint{Count: tc.min + i*tc.step})
		}
		if got := tickLabels(countTicks(points)); !slices.Equal(got, tc.want) {
			t.Errorf("countTicks(%d from %d step %d) = %q, want %q", tc.n, tc.min, tc.step, got, tc.want)
		}
	}
}

// tickLabels writes each choice of ticks as its labels.
func tickLabels(choices [][]chart.Tick) []string {
	var out []string
	for _, c := range choices {
		var l []string
		for _, tk := range c {
			l = append(l, tk.Label)
		}
		out = append(out, strings.Join(l, " "))
	}
	return out
}
