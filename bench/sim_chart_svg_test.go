package bench

import (
	"encoding/xml"
	"math"
	"strconv"
	"testing"
)

// Reading the charts back: SVG elements, their bounds, and the legend.

// checkLegend wants each swatch a few pixels from its label and returns
// the legend's frame and the bounds of everything in it.
func checkLegend(t *testing.T, g svgElem) (frame, all box) {
	t.Helper()
	all = box{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	lastLineEnd, lines := math.NaN(), 0
	for _, e := range g.Kids {
		var b box
		switch e.XMLName.Local {
		case "rect":
			b = e.rectBox(t)
			frame = b
		case "line":
			x1, x2, y := e.num(t, "x1"), e.num(t, "x2"), e.num(t, "y1")
			b = box{x1, y - 2, x2, y + 2}
			lastLineEnd = x2
			lines++
		case "text":
			x := e.num(t, "x")
			b = textBox(x, e.num(t, "y"), e.Text)
			if gap := x - lastLineEnd; !(gap > 0 && gap <= 10) {
				t.Errorf("label %q is %v px from its swatch", e.Text, gap)
			}
		}
		all = all.union(b)
	}
	if lines < 3 {
		t.Errorf("legend has %d entries", lines)
	}
	return frame, all
}

// textBox is a generous estimate of a 12.8 px text's bounds: the viewer's
// font is not known, so 0.6 em a character.
func textBox(x, y float64, s string) box {
	const px = 12.8
	return box{x, y - px, x + 0.6*px*float64(len([]rune(s))), y + 0.25*px}
}

type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

func (a box) union(b box) box {
	return box{min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1)}
}

// svgElem is any SVG element, read generically.
type svgElem struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []svgElem  `xml:",any"`
}

func (e svgElem) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (e svgElem) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", e.XMLName.Local, name, e.attr(name), err)
	}
	return v
}

func (e svgElem) rectBox(t *testing.T) box {
	x, y := e.num(t, "x"), e.num(t, "y")
	return box{x, y, x + e.num(t, "width"), y + e.num(t, "height")}
}

func (e svgElem) byID(id string) (svgElem, bool) {
	for _, k := range e.Kids {
		if k.attr("id") == id {
			return k, true
		}
	}
	return svgElem{}, false
}
