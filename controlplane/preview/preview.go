// Package preview draws the low-resolution still shown for a free account's preview
// project. The picture is procedural: colours, light and shapes come from a hash of
// the prompt, and the first words of the prompt are lettered on it, so the same
// project always gets the same still and different projects look different. It is
// meant to be displayed blurred, as the contract says.
package preview

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Size returns the still's size for an orientation or aspect ratio ("portrait",
// "9:16", "1:1", anything else is landscape 16:9).
func Size(shape string) (w, h int) {
	switch shape {
	case "portrait", "9:16", "3:4":
		return 144, 256
	case "1:1":
		return 192, 192
	}
	return 256, 144
}

// PNG renders the still for prompt at the given shape.
func PNG(prompt, shape string) ([]byte, error) {
	w, h := Size(shape)
	sum := sha256.Sum256([]byte(prompt))
	hue := float64(binary.BigEndian.Uint16(sum[0:2])) / 65535
	c1 := hsv(hue, 0.65, 0.85)
	c2 := hsv(math.Mod(hue+0.45, 1), 0.7, 0.35)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		t := float64(y) / float64(h-1)
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, mix(c1, c2, t*0.8+0.2*float64(x)/float64(w)))
		}
	}
	// A few soft discs placed by the hash stand in for the scene's subjects.
	for i := 0; i < 4; i++ {
		cx := int(sum[4+i*3]) * w / 256
		cy := int(sum[5+i*3]) * h / 256
		r := 10 + int(sum[6+i*3])%(h/3)
		col := hsv(math.Mod(hue+float64(i)*0.17, 1), 0.5, 0.95)
		disc(img, cx, cy, r, col)
	}
	letter(img, caption(prompt), w, h)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode preview png: %w", err)
	}
	return buf.Bytes(), nil
}

func caption(prompt string) string {
	words := strings.Fields(prompt)
	if len(words) > 4 {
		words = words[:4]
	}
	s := strings.Join(words, " ")
	if len(s) > 28 {
		s = s[:28]
	}
	return s
}

func letter(img *image.RGBA, text string, w, h int) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(color.RGBA{255, 255, 255, 255}), Face: basicfont.Face7x13}
	width := d.MeasureString(text).Round()
	d.Dot = fixed.P(max((w-width)/2, 4), h-12)
	d.DrawString(text)
}

func disc(img *image.RGBA, cx, cy, r int, c color.RGBA) {
	b := img.Bounds()
	for y := max(cy-r, 0); y < min(cy+r, b.Max.Y); y++ {
		for x := max(cx-r, 0); x < min(cx+r, b.Max.X); x++ {
			d := math.Hypot(float64(x-cx), float64(y-cy)) / float64(r)
			if d < 1 {
				img.SetRGBA(x, y, mix(img.RGBAAt(x, y), c, 0.6*(1-d*d)))
			}
		}
	}
}

func mix(a, b color.RGBA, t float64) color.RGBA {
	l := func(x, y uint8) uint8 { return uint8(float64(x)*(1-t) + float64(y)*t) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), 255}
}

func hsv(h, s, v float64) color.RGBA {
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-f*s), v*(1-(1-f)*s)
	var r, g, b float64
	switch int(i) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return color.RGBA{uint8(r * 255), uint8(g * 255), uint8(b * 255), 255}
}
