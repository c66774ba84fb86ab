// Package avatarart draws the procedural presenters: the stock avatars
// that ship with vidfarm and the portraits an agent makes from an avatar's
// prompt. One leaf, so the agent that composites a presenter and the control
// plane that shows a stock avatar's picture in the catalogue draw the same
// pixels.
package avatarart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"sync"
)

// Look is how a presenter is drawn: the badge's background, skin, hair
// and shirt colours, and whether the hair is long.
type Look struct {
	BG, Skin, Hair, Shirt color.RGBA
	LongHair              bool
}

// stockLooks are the stock avatars' looks, by id (models.StockAvatars);
// a test checks that every stock avatar has one.
var stockLooks = map[string]Look{
	"av_stock_amara": {RGB(0x2a9d8f), RGB(0x8d5524), RGB(0x1b1b1b), RGB(0xe9c46a), true},
	"av_stock_ben":   {RGB(0x457b9d), RGB(0xf1c27d), RGB(0x6f4e37), RGB(0x1d3557), false},
	"av_stock_chen":  {RGB(0xe76f51), RGB(0xe0ac69), RGB(0x0f0f0f), RGB(0x264653), false},
	"av_stock_dara":  {RGB(0x8338ec), RGB(0xffdbac), RGB(0xb5651d), RGB(0xfb5607), true},
	"av_stock_eli":   {RGB(0x06d6a0), RGB(0xc68642), RGB(0x2b1d0e), RGB(0xef476f), false},
	"av_stock_farah": {RGB(0xffb703), RGB(0xa0522d), RGB(0x3d2314), RGB(0x023047), true},
}

// RGB is the opaque colour 0xRRGGBB.
func RGB(v uint32) color.RGBA {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

// StockSize is the side of a stock avatar's picture in pixels.
const StockSize = 256

// stockPNGs caches each stock avatar's picture: drawing one takes about a
// millisecond, and the catalogue shows them all on every page.
var stockPNGs sync.Map // id → func() ([]byte, error)

// StockPNG is stock avatar id's picture, a StockSize square PNG: a round
// badge, transparent outside, with a head and shoulders. The same bytes on
// every call and in every binary of a release.
func StockPNG(id string) ([]byte, error) {
	l, ok := stockLooks[id]
	if !ok {
		return nil, fmt.Errorf("avatarart: %q is not a stock avatar", id)
	}
	f, _ := stockPNGs.LoadOrStore(id, sync.OnceValues(func() ([]byte, error) {
		var b bytes.Buffer
		if err := png.Encode(&b, Draw(l, StockSize, true)); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}))
	return f.(func() ([]byte, error))()
}

// ellipse is a filled ellipse in unit coordinates (0..1 across the badge).
type ellipse struct {
	cx, cy, rx, ry float64
	c              color.RGBA
	maxY           float64 // only drawn above this y (0 = everywhere)
}

// coverage is how much of the pixel at (x, y) the ellipse covers, with a
// one-pixel soft edge for anti-aliasing.
func (e ellipse) coverage(x, y float64, size int) float64 {
	if e.maxY > 0 && y > e.maxY {
		return 0
	}
	d := math.Hypot((x-e.cx)/e.rx, (y-e.cy)/e.ry)
	return min(max((1-d)*min(e.rx, e.ry)*float64(size), 0), 1)
}

// Draw draws a head and shoulders on a size×size canvas: a round badge,
// transparent outside, when badge is set (the stock avatars), else an opaque
// square portrait.
func Draw(a Look, size int, badge bool) *image.NRGBA {
	shade := func(c color.RGBA, f float64) color.RGBA {
		return color.RGBA{uint8(float64(c.R) * f), uint8(float64(c.G) * f), uint8(float64(c.B) * f), 255}
	}
	layers := []ellipse{{cx: 0.5, cy: 0.5, rx: 0.5, ry: 0.5, c: a.BG}}
	if a.LongHair {
		layers = append(layers, ellipse{cx: 0.5, cy: 0.5, rx: 0.25, ry: 0.3, c: a.Hair})
	}
	layers = append(layers,
		ellipse{cx: 0.5, cy: 1.02, rx: 0.36, ry: 0.3, c: a.Shirt},               // shoulders
		ellipse{cx: 0.5, cy: 0.7, rx: 0.07, ry: 0.1, c: shade(a.Skin, 0.85)},    // neck
		ellipse{cx: 0.5, cy: 0.45, rx: 0.17, ry: 0.21, c: a.Skin},               // face
		ellipse{cx: 0.5, cy: 0.36, rx: 0.19, ry: 0.15, c: a.Hair, maxY: 0.35},   // hair
		ellipse{cx: 0.435, cy: 0.45, rx: 0.02, ry: 0.024, c: RGB(0x222222)},     // eyes
		ellipse{cx: 0.565, cy: 0.45, rx: 0.02, ry: 0.024, c: RGB(0x222222)},     //
		ellipse{cx: 0.5, cy: 0.555, rx: 0.05, ry: 0.018, c: shade(a.Skin, 0.6)}, // mouth
	)
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for py := range size {
		for px := range size {
			x, y := (float64(px)+0.5)/float64(size), (float64(py)+0.5)/float64(size)
			bg := layers[0].c // colour under the soft edge, so it has no dark fringe
			r, g, b := float64(bg.R), float64(bg.G), float64(bg.B)
			for _, l := range layers[1:] {
				k := l.coverage(x, y, size)
				r, g, b = r*(1-k)+float64(l.c.R)*k, g*(1-k)+float64(l.c.G)*k, b*(1-k)+float64(l.c.B)*k
			}
			alpha := 1.0
			if badge {
				alpha = layers[0].coverage(x, y, size)
			}
			img.SetNRGBA(px, py, color.NRGBA{uint8(r), uint8(g), uint8(b), uint8(alpha * 255)})
		}
	}
	return img
}
