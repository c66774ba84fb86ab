package pipeline

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"

	"github.com/vidfarm/vidfarm/models"
)

// DefaultAvatar is the stock presenter of an auto video that names none.
const DefaultAvatar = models.DefaultAvatar

// StockAvatar is one of the presenters that ship with vidfarm (the list is
// models.StockAvatars). Their pictures are drawn by code (WriteStockAvatar),
// so nothing is downloaded.
type StockAvatar = models.StockAvatar

// avatarLook is how an avatar is drawn.
type avatarLook struct {
	bg, skin, hair, shirt color.RGBA
	longHair              bool
}

// stockLooks are the stock avatars' looks, by id; a test checks that every
// stock avatar has one.
var stockLooks = map[string]avatarLook{
	"av_stock_amara": {rgb(0x2a9d8f), rgb(0x8d5524), rgb(0x1b1b1b), rgb(0xe9c46a), true},
	"av_stock_ben":   {rgb(0x457b9d), rgb(0xf1c27d), rgb(0x6f4e37), rgb(0x1d3557), false},
	"av_stock_chen":  {rgb(0xe76f51), rgb(0xe0ac69), rgb(0x0f0f0f), rgb(0x264653), false},
	"av_stock_dara":  {rgb(0x8338ec), rgb(0xffdbac), rgb(0xb5651d), rgb(0xfb5607), true},
	"av_stock_eli":   {rgb(0x06d6a0), rgb(0xc68642), rgb(0x2b1d0e), rgb(0xef476f), false},
	"av_stock_farah": {rgb(0xffb703), rgb(0xa0522d), rgb(0x3d2314), rgb(0x023047), true},
}

func rgb(v uint32) color.RGBA {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

// StockAvatars lists the stock presenters, DefaultAvatar first.
func StockAvatars() []StockAvatar { return models.StockAvatars() }

// stockAvatarSize is the side of a stock avatar picture in pixels.
const stockAvatarSize = 256

// WriteStockAvatar writes the picture of stock avatar id to path as a
// 256x256 PNG: a round badge (transparent outside) with a head and
// shoulders. The picture is the same on every run.
func WriteStockAvatar(id, path string) error {
	look, ok := stockLooks[id]
	if _, stock := models.GetStockAvatar(id); !ok || !stock {
		return fmt.Errorf("%w: %q", ErrUnknownAvatar, id)
	}
	if err := encodePNGFile(path, drawAvatar(look, stockAvatarSize, true)); err != nil {
		return fmt.Errorf("stock avatar: %w", err)
	}
	return nil
}

// encodePNGFile encodes img into a new file at path.
func encodePNGFile(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// drawAvatar draws a head and shoulders on a size×size canvas: a round badge,
// transparent outside, when badge is set (the stock avatars), else an opaque
// square portrait.
func drawAvatar(a avatarLook, size int, badge bool) *image.NRGBA {
	shade := func(c color.RGBA, f float64) color.RGBA {
		return color.RGBA{uint8(float64(c.R) * f), uint8(float64(c.G) * f), uint8(float64(c.B) * f), 255}
	}
	layers := []ellipse{{cx: 0.5, cy: 0.5, rx: 0.5, ry: 0.5, c: a.bg}}
	if a.longHair {
		layers = append(layers, ellipse{cx: 0.5, cy: 0.5, rx: 0.25, ry: 0.3, c: a.hair})
	}
	layers = append(layers,
		ellipse{cx: 0.5, cy: 1.02, rx: 0.36, ry: 0.3, c: a.shirt},               // shoulders
		ellipse{cx: 0.5, cy: 0.7, rx: 0.07, ry: 0.1, c: shade(a.skin, 0.85)},    // neck
		ellipse{cx: 0.5, cy: 0.45, rx: 0.17, ry: 0.21, c: a.skin},               // face
		ellipse{cx: 0.5, cy: 0.36, rx: 0.19, ry: 0.15, c: a.hair, maxY: 0.35},   // hair
		ellipse{cx: 0.435, cy: 0.45, rx: 0.02, ry: 0.024, c: rgb(0x222222)},     // eyes
		ellipse{cx: 0.565, cy: 0.45, rx: 0.02, ry: 0.024, c: rgb(0x222222)},     //
		ellipse{cx: 0.5, cy: 0.555, rx: 0.05, ry: 0.018, c: shade(a.skin, 0.6)}, // mouth
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
