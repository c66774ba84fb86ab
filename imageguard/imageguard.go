// Package imageguard is the farm's one rule for the size of input images
// in pixels, shared, as netguard's address policy is, by the control plane
// (which refuses image assets over it when they are completed) and the
// agent (which checks every image it reads before any tool does): one
// limit, one reading of headers, so both refuse exactly the same images.
//
// Bytes are capped elsewhere, but a compressed image says nothing of its
// decoded size: a 746 KB PNG of 16000x16000 pixels made each ffmpeg that
// read it reach 880 MB. 8192 pixels a side and 50 megapixels are far above
// any model's input (4K is 8.3 megapixels) and take a full-resolution
// 50-megapixel phone photo (8160x6120), while a decoded frame stays under
// 200 MB. It is a leaf package: the standard library and golang.org/x/image.
package imageguard

import (
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/bmp"
	"golang.org/x/image/webp"
)

const (
	MaxSide   = 8192       // the largest width or height, in pixels
	MaxPixels = 50_000_000 // the largest width × height
)

// headers read the header of each image type the farm takes: the image's
// dimensions, without decoding its pixels.
var headers = map[string]func(io.Reader) (image.Config, error){
	"image/png":  png.DecodeConfig,
	"image/jpeg": jpeg.DecodeConfig,
	"image/webp": webp.DecodeConfig,
	"image/gif":  gif.DecodeConfig,
	"image/bmp":  bmp.DecodeConfig,
}

// Readable reports whether Size reads images of mediaType (a sniffed type,
// such as http.DetectContentType gives).
func Readable(mediaType string) bool {
	_, ok := headers[mediaType]
	return ok
}

// Size reads the width and height from the header of an image of
// mediaType at the start of r; only the header is read (for a JPEG that may
// be past its metadata). It fails for a type Readable refuses, or a header
// that cannot be read.
func Size(mediaType string, r io.Reader) (w, h int, err error) {
	read, ok := headers[mediaType]
	if !ok {
		return 0, 0, fmt.Errorf("no image header reader for %s", mediaType)
	}
	cfg, err := read(r)
	if err != nil {
		return 0, 0, err
	}
	return cfg.Width, cfg.Height, nil
}

// ErrTooLarge is Check's answer for an image over MaxSide or MaxPixels.
var ErrTooLarge = errors.New("too large")

// Check returns nil for a w×h image within the limits, or what is wrong
// with it, worded to follow "<the image> is ": "16000x16000 pixels (256.0
// megapixels); images may be at most 8192 pixels a side and 50 megapixels"
// (wrapping ErrTooLarge), or "0x0 pixels: it has none".
func Check(w, h int) error {
	switch {
	case w < 1 || h < 1:
		return fmt.Errorf("%dx%d pixels: it has none", w, h)
	case w > MaxSide || h > MaxSide || int64(w)*int64(h) > MaxPixels:
		return &tooLarge{w, h}
	}
	return nil
}

type tooLarge struct{ w, h int }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%dx%d pixels (%.1f megapixels); images may be at most %d pixels a side and %d megapixels",
		e.w, e.h, float64(e.w)*float64(e.h)/1e6, MaxSide, MaxPixels/1_000_000)
}

func (e *tooLarge) Unwrap() error { return ErrTooLarge }
