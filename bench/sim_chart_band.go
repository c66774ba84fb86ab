package bench

import (
	"fmt"
	"slices"
	"strings"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Confidence bands. go-chart has no band series, so a band is an SVG path
// drawn over the plot once its box is known (renderWithLegend's extra):
// the upper bound left to right, the lower right to left, filled with the
// line's colour at bandOpacity so the lines show through.

const bandOpacity = 0.2

// band is one line's confidence interval: lo[i] to hi[i] at xs[i], in the
// y axis' unit.
type band struct {
	colour     drawing.Color
	xs, lo, hi []float64
}

// plotScale maps data to pixels in a plot box: x from x0 to x1 across,
// y from 0 at the bottom to top.
type plotScale struct {
	x0, x1, top float64
}

// svg draws the bands inside plot, each value clipped to [0, top], in a
// group with id "ci-bands".
func (s plotScale) svg(plot chart.Box, bands []band) string {
	if len(bands) == 0 {
		return ""
	}
	px := func(x float64) float64 { return float64(plot.Left) + (x-s.x0)/(s.x1-s.x0)*float64(plot.Width()) }
	py := func(y float64) float64 {
		return float64(plot.Bottom) - min(max(y, 0), s.top)/s.top*float64(plot.Height())
	}
	var b strings.Builder
	b.WriteString(`<g id="ci-bands">`)
	for _, bd := range bands {
		var d strings.Builder
		for i, x := range bd.xs {
			fmt.Fprintf(&d, "%s%.1f %.1f ", map[bool]string{true: "M", false: "L"}[i == 0], px(x), py(bd.hi[i]))
		}
		for i := len(bd.xs) - 1; i >= 0; i-- {
			fmt.Fprintf(&d, "L%.1f %.1f ", px(bd.xs[i]), py(bd.lo[i]))
		}
		fmt.Fprintf(&b, `<path d="%sZ" fill="%s" fill-opacity="%g" stroke="none"/>`,
			d.String(), bd.colour.WithAlpha(255).String(), bandOpacity)
	}
	b.WriteString(`</g>`)
	return b.String()
}

// bandLegend is the legend's entry for the bands: a thick, pale swatch.
// seriesLegend is the legend of a chart's series, with the bands' entry
// when there are bands.
func seriesLegend(series []chart.Series, bands []band, seeds int) (legend, error) {
	if len(bands) > 0 {
		series = append(slices.Clone(series), bandLegend(seeds))
	}
	return newLegend(series)
}

func bandLegend(seeds int) chart.ContinuousSeries {
	return chart.ContinuousSeries{Name: fmt.Sprintf("shaded: 95%% CI over %d seeds", seeds),
		Style: chart.Style{StrokeColor: drawing.ColorFromHex("999999").WithAlpha(90), StrokeWidth: 10}}
}

// seedsLabel is how a title names the runs: "seed 7" or "10 seeds from 7".
func seedsLabel(seed uint64, replications int) string {
	if replications > 1 {
		return fmt.Sprintf("%d seeds from %d", replications, seed)
	}
	return fmt.Sprintf("seed %d", seed)
}
