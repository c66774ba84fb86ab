package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// The parts of a chart go-chart lays out badly for a slide: its legends
// sit inside the plot, over the data, and its generated ticks are the
// range cut into equal parts (0, 11, 22 … %). Ticks here are round, and
// the legend is drawn outside the plot after go-chart is done.

// niceStep returns the smallest step of the form 1, 2 or 5 × 10^k that
// cuts span into at most maxTicks intervals: people read 0, 20, 40 at a
// glance and 0, 17, 34 not at all.
func niceStep(span float64, maxTicks int) float64 {
	if !(span > 0) || maxTicks < 1 || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(maxTicks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		// The tolerance keeps 0.3/3 from asking for 0.2 after rounding.
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// roundTicks returns ticks at multiples of a nice step from 0 to the first
// multiple at or above top, and that last tick's value. label formats a
// value; it is given the step's decimals.
func roundTicks(top float64, maxTicks int, label func(v float64, decimals int) string) ([]chart.Tick, float64) {
	if !(top > 0) {
		top = 1
	}
	step := niceStep(top, maxTicks)
	decimals := max(0, int(math.Ceil(-math.Log10(step)-1e-9)))
	n := int(math.Ceil(top/step - 1e-9))
	ticks := make([]chart.Tick, 0, n+1)
	for i := 0; i <= n; i++ {
		// i*step, not a running sum, so 0.1 steps do not drift.
		v := float64(i) * step
		ticks = append(ticks, chart.Tick{Value: v, Label: label(v, decimals)})
	}
	return ticks, float64(n) * step
}

func plainLabel(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

// tickedRange is an axis range that brings its own ticks. Ticks given in
// an axis' Ticks field make go-chart v2.1.2 reset the range to the ticks'
// span, and the secondary y axis' range to the primary's ticks; ticks from
// the range leave the range as set.
type tickedRange struct {
	*chart.ContinuousRange
	ticks []chart.Tick
	// choices, for an x axis, are tick sets from the densest to the
	// sparsest: GetTicks gives the first whose labels fit (ticksFit). How
	// long the axis is, go-chart knows only while it lays the chart out
	// (the range's domain, in pixels), and it depends on the legend and
	// the y axes' labels: a fixed count of ticks overlapped on a narrow
	// plot or with long labels (99999, 100000).
	choices [][]chart.Tick
}

func newTickedRange(lo, hi float64, ticks []chart.Tick) tickedRange {
	return tickedRange{ContinuousRange: &chart.ContinuousRange{Min: lo, Max: hi}, ticks: ticks}
}

// newFittedRange is a range whose ticks are the first of choices that
// fits the axis' length.
func newFittedRange(lo, hi float64, choices [][]chart.Tick) tickedRange {
	return tickedRange{ContinuousRange: &chart.ContinuousRange{Min: lo, Max: hi}, choices: choices}
}

// GetTicks implements chart.TicksProvider. go-chart calls it with the
// axes' style after it has set the range's domain to the plot's width.
func (r tickedRange) GetTicks(_ chart.Renderer, style chart.Style, _ chart.ValueFormatter) []chart.Tick {
	if len(r.choices) == 0 {
		return r.ticks
	}
	fontPx := drawing.PointsToPixels(chart.DefaultDPI, style.GetFontSize(chart.DefaultAxisFontSize))
	for _, ticks := range r.choices {
		if ticksFit(ticks, r.Min, r.Max, float64(r.GetDomain()), fontPx) {
			return ticks
		}
	}
	return r.choices[len(r.choices)-1]
}

// labelEm is the width of a tick label's character in ems, generously:
// digits are 0.56 em in Roboto, which go-chart measures with, and 0.64 em
// in DejaVu Sans, which a viewer without Roboto (rsvg-convert on most
// Linux hosts) draws them in.
const labelEm = 0.65

// labelWidth is a tick label's width in pixels at fontPx (labelEm).
func labelWidth(label string, fontPx float64) float64 {
	return labelEm * fontPx * float64(utf8.RuneCountInString(label))
}

// ticksFit reports whether ticks on an axis from lo to hi drawn over
// pixels leave at least an em between any two neighbouring labels, each
// centred on its tick as go-chart draws them.
func ticksFit(ticks []chart.Tick, lo, hi, pixels, fontPx float64) bool {
	if !(hi > lo) {
		return len(ticks) < 2
	}
	for i := 1; i < len(ticks); i++ {
		apart := (ticks[i].Value - ticks[i-1].Value) / (hi - lo) * pixels
		if apart < (labelWidth(ticks[i-1].Label, fontPx)+labelWidth(ticks[i].Label, fontPx))/2+fontPx {
			return false
		}
	}
	return true
}

// timeUnit is the unit a wait axis is drawn in.
type timeUnit struct {
	name, short string
	seconds     float64
}

var (
	unitSeconds = timeUnit{"seconds", "s", 1}
	unitMinutes = timeUnit{"minutes", "min", 60}
	unitHours   = timeUnit{"hours", "h", 3600}
)

// waitUnit picks the unit for an axis reaching top seconds: a planner
// reads "3 h" where 10,800 s needs arithmetic.
func waitUnit(top float64) timeUnit {
	switch {
	case top >= 3*3600:
		return unitHours
	case top >= 5*60:
		return unitMinutes
	}
	return unitSeconds
}

// fmtWait writes a target or an axis' top in the largest unit that keeps
// it short and exact: "2 min", "1.5 h", but "100 s" rather than
// "1.6666666666666667 min".
func fmtWait(seconds float64) string {
	for _, u := range []timeUnit{unitHours, unitMinutes} {
		v := seconds / u.seconds
		if v >= 1 && math.Abs(v*10-math.Round(v*10)) < 1e-9 {
			return strconv.FormatFloat(v, 'f', -1, 64) + " " + u.short
		}
	}
	return strconv.FormatFloat(seconds, 'f', -1, 64) + " s"
}

// waitAxis is a wait axis from 0 to at least topSeconds in a unit chosen
// for the range; values must be divided by unit.seconds.
func waitAxis(what string, topSeconds float64) (chart.YAxis, timeUnit, float64) {
	u := waitUnit(topSeconds)
	ticks, top := roundTicks(topSeconds/u.seconds, 8, plainLabel)
	// go-chart calls every other grid line minor; a line at every tick
	// reads better.
	grid := chart.Style{StrokeColor: drawing.ColorFromHex("e0e0e0"), StrokeWidth: 1}
	return chart.YAxis{
		Name:           what + ", " + u.name,
		Range:          newTickedRange(0, top, ticks),
		GridMajorStyle: grid,
		GridMinorStyle: grid,
	}, u, top
}

// percentAxis is utilisation, 0–100% every 20%, with a little headroom so
// a farm at 100% draws below the plot's top edge rather than on it.
func percentAxis() chart.YAxis {
	var ticks []chart.Tick
	for p := 0; p <= 100; p += 20 {
		ticks = append(ticks, chart.Tick{Value: float64(p) / 100, Label: fmt.Sprintf("%d%%", p)})
	}
	return chart.YAxis{
		Name:           "utilisation",
		Range:          newTickedRange(0, 1.04, ticks),
		GridMajorStyle: chart.Style{Hidden: true},
		GridMinorStyle: chart.Style{Hidden: true},
	}
}

// maxXTicks bounds an x axis' intervals however wide the plot: a label
// every 5% of the axis is as many as a reader uses.
const maxXTicks = 16

// hourSteps are the steps of a time-of-run axis, in minutes: under an
// hour for runs shorter than two, then steps that divide a day, so a
// diurnal workload's noon and midnight fall on ticks, then whole days (2,
// 3, a week, two, 30, 60, 90, 180 and 365).
var hourSteps = []int{1, 2, 5, 10, 15, 30, 60, 2 * 60, 3 * 60, 6 * 60, 12 * 60, 24 * 60,
	2 * 1440, 3 * 1440, 7 * 1440, 14 * 1440, 30 * 1440, 60 * 1440, 90 * 1440, 180 * 1440, 365 * 1440}

// hourTicks are the choices of ticks for a time-of-run axis, densest
// first: every step of hourSteps that cuts the run into at most maxXTicks
// intervals and still gives two ticks, labelled in minutes below an hour
// ("15 min") and in hours from there ("6 h"); for a run too short for
// that, its start.
func hourTicks(hours float64) [][]chart.Tick {
	var out [][]chart.Tick
	for _, step := range hourSteps {
		if (step < 60 && hours >= 2) || hours*60/float64(step) > maxXTicks {
			continue
		}
		var ticks []chart.Tick
		for i := 0; float64(i*step) <= hours*60+1e-9; i++ {
			label := fmt.Sprintf("%d h", i*step/60)
			if step < 60 {
				label = fmt.Sprintf("%d min", i*step)
			}
			ticks = append(ticks, chart.Tick{Value: float64(i*step) / 60, Label: label})
		}
		if len(ticks) < 2 {
			break
		}
		out = append(out, ticks)
	}
	if len(out) == 0 {
		out = append(out, []chart.Tick{{Value: 0, Label: "0 min"}})
	}
	return out
}

// Legend geometry, in pixels.
const (
	legendFontPoints = 10.0
	legendSwatch     = 24 // line sample length
	legendGap        = 6  // swatch to label
	legendRow        = 20
	legendPad        = 8  // inside the frame
	legendMargin     = 16 // from whatever is left of the legend
	titleFontPoints  = 14.0
	titleBaseline    = 30
)

// legend lists the chart's series beside the plot, on its right.
type legend struct {
	items  []chart.ContinuousSeries
	widths []int // each label's measured width
	width  int   // the frame's
}

// newLegend measures the labels with go-chart's own font; the width is
// padded by a sixth because a viewer without that font (Roboto) falls
// back to a wider one, and the label must still fit the image.
func newLegend(series []chart.Series) (legend, error) {
	r, err := measurer(legendFontPoints)
	if err != nil {
		return legend{}, err
	}
	var l legend
	widest := 0
	for _, s := range series {
		cs, ok := s.(chart.ContinuousSeries)
		if !ok {
			return legend{}, fmt.Errorf("bench: chart legend: unsupported series %T", s)
		}
		w := r.MeasureText(cs.Name).Width()
		l.items, l.widths = append(l.items, cs), append(l.widths, w)
		widest = max(widest, w)
	}
	l.width = 2*legendPad + legendSwatch + legendGap + widest*7/6
	return l, nil
}

// measurer is a renderer that measures text as go-chart does, in its
// font at points.
func measurer(points float64) (chart.Renderer, error) {
	font, err := chart.GetDefaultFont()
	if err != nil {
		return nil, err
	}
	r, err := chart.SVG(1, 1)
	if err != nil {
		return nil, err
	}
	r.SetDPI(chart.DefaultDPI)
	r.SetFont(font)
	r.SetFontSize(points)
	return r, nil
}

// plotPadLeft is the chart's padding left of the wait axis' labels: room
// for the axis' name (leftAxisName).
const plotPadLeft = 34

// leftAxisName draws the left (wait) axis' name. go-chart puts its
// baseline 10 px left of the widest label and turns it by 90°, so the
// letters rise from the baseline to the right, most of an em: over the
// labels. Here they end 4 px before the widest label's left edge (which
// go-chart puts DefaultYAxisMargin and the axis line left of the plot),
// still reading top to bottom like the right axis' name.
func leftAxisName(plot chart.Box, y chart.YAxis) (string, error) {
	tr, ok := y.Range.(tickedRange)
	if !ok || y.Name == "" {
		return "", nil
	}
	r, err := measurer(chart.DefaultAxisFontSize)
	if err != nil {
		return "", err
	}
	widest := 0
	for _, t := range tr.ticks {
		widest = max(widest, r.MeasureText(t.Label).Width())
	}
	px := drawing.PointsToPixels(chart.DefaultDPI, chart.DefaultAxisFontSize)
	labelsLeft := plot.Left - int(chart.DefaultAxisLineWidth) - chart.DefaultYAxisMargin - widest
	x, cy := labelsLeft-4-int(math.Ceil(0.8*px)), (plot.Top+plot.Bottom)/2
	return fmt.Sprintf(`<text id="y-axis-name" x="%d" y="%d" text-anchor="middle" transform="rotate(90,%d,%d)" %s fill="%s">%s</text>`,
		x, cy, x, cy, fontAttrs(chart.DefaultAxisFontSize), textColour, xmlEscape(y.Name)), nil
}

// plotBox is where go-chart puts c's plot when renderWithLegend renders
// it: c is rendered once, to nowhere, to find out. The box does not
// depend on the x axis' name, only on whether it has one (a row of text
// below the labels), so a name can be chosen to fit the box (fitXName)
// and c rendered again with it.
func plotBox(c chart.Chart) (chart.Box, error) {
	var plot chart.Box
	c.Elements = append(slices.Clone(c.Elements), func(_ chart.Renderer, cb chart.Box, _ chart.Style) { plot = cb })
	c.YAxisSecondary.NameStyle.Hidden = true // as renderWithLegend does
	if err := c.Render(chart.SVG, io.Discard); err != nil {
		return chart.Box{}, err
	}
	return plot, nil
}

// xNameMargin is the least room between the x axis' name (or the title)
// and the image's edges.
const xNameMargin = 4

// fitXName is the first of names (longest first, unescaped) that fits an
// image width px wide as the x axis' name under plot, or the last cut
// short with an ellipsis until it fits. go-chart centres the name on the
// plot by its width in Roboto, which is left of the image's centre (the
// legend is on the right), so the name starts at the plot's centre less
// half that width; a viewer without Roboto draws it from there in a wider
// font (labelWidth's 0.65 em a character), so it must fit to the right as
// well.
func fitXName(plot chart.Box, width int, names []string) (string, error) {
	r, err := measurer(chart.DefaultAxisFontSize)
	if err != nil {
		return "", err
	}
	px := drawing.PointsToPixels(chart.DefaultDPI, chart.DefaultAxisFontSize)
	fits := func(name string) bool {
		w := r.MeasureText(name).Width()
		x0 := plot.Right - (plot.Width()>>1 + w>>1) // as go-chart's XAxis.Render
		return x0 >= xNameMargin && float64(x0)+max(float64(w), labelWidth(name, px)) <= float64(width-xNameMargin)
	}
	for _, n := range names[:len(names)-1] {
		if fits(n) {
			return n, nil
		}
	}
	return cutToFit(names[len(names)-1], fits), nil
}

// cutToFit is s, or s cut short with an ellipsis until it fits: a name
// from the user's files (a farm's, a group's) can be any length.
func cutToFit(s string, fits func(string) bool) string {
	if fits(s) {
		return s
	}
	rs := []rune(s)
	for k := len(rs) - 1; k > 0; k-- {
		if c := strings.TrimRight(string(rs[:k]), " ") + "…"; fits(c) {
			return c
		}
	}
	return "…"
}

// fitTitle is title cut to fit an image width px wide, centred on it,
// in the title's font or a wider one (labelWidth's 0.65 em a character).
func fitTitle(title string, width int) (string, error) {
	r, err := measurer(titleFontPoints)
	if err != nil {
		return "", err
	}
	px := drawing.PointsToPixels(chart.DefaultDPI, titleFontPoints)
	return cutToFit(title, func(t string) bool {
		return max(float64(r.MeasureText(t).Width()), labelWidth(t, px)) <= float64(width-2*xNameMargin)
	}), nil
}

// reserve is the right padding the chart needs for the legend.
func (l legend) reserve() int { return l.width + 2*legendMargin }

// svg draws the legend with its top-left corner at x, y, in a group with
// id "legend".
func (l legend) svg(x, y int) string {
	var b strings.Builder
	px := drawing.PointsToPixels(chart.DefaultDPI, legendFontPoints)
	fmt.Fprintf(&b, `<g id="legend" %s>`, fontAttrs(legendFontPoints))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="white" stroke="#cccccc" stroke-width="1"/>`,
		x, y, l.width, 2*legendPad+len(l.items)*legendRow)
	for i, s := range l.items {
		cy := y + legendPad + i*legendRow + legendRow/2
		sx := x + legendPad
		dash := ""
		if len(s.Style.StrokeDashArray) > 0 {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, strings.Trim(fmt.Sprint(s.Style.StrokeDashArray), "[]"))
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%g"%s/>`,
			sx, cy, sx+legendSwatch, cy, s.Style.StrokeColor.String(), s.Style.StrokeWidth, dash)
		// The baseline a third of the font's size below the swatch's line
		// centres the lowercase letters on it.
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`,
			sx+legendSwatch+legendGap, cy+int(px/3), textColour, xmlEscape(s.Name))
	}
	b.WriteString(`</g>`)
	return b.String()
}

// renderWithLegend renders c with the title and l, the legend, to the
// right of the plot. go-chart decides where the plot goes only inside
// Render, so an element records it and the legend is added to the SVG
// afterwards, with the width and height attributes go-chart leaves out
// (slide software and rsvg-convert size the image by them) and the plot
// area as an invisible rectangle with id "plot-area" for tools and tests.
// The title is drawn here too: go-chart's comes out rotated when a y axis
// has a name (the axis leaves its rotation set); so is the left axis' name
// (leftAxisName). extra draws more inside the plot once its box is known.
func renderWithLegend(w io.Writer, c chart.Chart, title string, l legend, extra func(plot chart.Box) string) error {
	var plot chart.Box
	c.Elements = append(c.Elements, func(_ chart.Renderer, cb chart.Box, _ chart.Style) { plot = cb })
	leftAxis := c.YAxisSecondary
	c.YAxisSecondary.NameStyle.Hidden = true // drawn by leftAxisName
	var buf bytes.Buffer
	if err := c.Render(chart.SVG, &buf); err != nil {
		return err
	}
	out := strings.TrimSuffix(buf.String(), "</svg>")
	out = strings.Replace(out, `<svg `, fmt.Sprintf(`<svg width="%d" height="%d" `, c.Width, c.Height), 1)
	var b strings.Builder
	b.WriteString(out)
	fmt.Fprintf(&b, `<rect id="plot-area" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="none"/>`,
		plot.Left, plot.Top, plot.Width(), plot.Height())
	title, err := fitTitle(title, c.Width)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, `<text id="title" x="%d" y="%d" text-anchor="middle" %s fill="%s">%s</text>`,
		c.Width/2, titleBaseline, fontAttrs(titleFontPoints), textColour, xmlEscape(title))
	name, err := leftAxisName(plot, leftAxis)
	if err != nil {
		return err
	}
	b.WriteString(name)
	if extra != nil {
		b.WriteString(extra(plot))
	}
	b.WriteString(l.svg(c.Width-l.reserve()+legendMargin, plot.Top))
	b.WriteString("</svg>")
	_, err = io.WriteString(w, b.String())
	return err
}

// textColour is go-chart's, so added text matches the axes'.
const textColour = "rgba(51,51,51,1.0)"

// fontAttrs gives added text go-chart's font (Roboto, which it measures
// with) at the size go-chart would write for points.
func fontAttrs(points float64) string {
	return fmt.Sprintf(`font-family="'Roboto Medium',sans-serif" font-size="%.1fpx"`, drawing.PointsToPixels(chart.DefaultDPI, points))
}

// xmlEscape escapes s for SVG text: go-chart writes text as given, and
// group and farm names come from the user's files.
func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
