package preview

import (
	"bytes"
	"image/png"
	"testing"
)

func TestPNGShapesAndDeterminism(t *testing.T) {
	for _, c := range []struct {
		shape string
		w, h  int
	}{
		{"landscape", 256, 144}, {"16:9", 256, 144}, {"portrait", 144, 256}, {"9:16", 144, 256},
		{"3:4", 144, 256}, {"1:1", 192, 192}, {"", 256, 144},
	} {
		b, err := PNG("a lantern on a hill at dusk", c.shape)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", c.shape, err)
		}
		if got := img.Bounds().Size(); got.X != c.w || got.Y != c.h {
			t.Errorf("%s: %v, want %dx%d", c.shape, got, c.w, c.h)
		}
		again, _ := PNG("a lantern on a hill at dusk", c.shape)
		if !bytes.Equal(b, again) {
			t.Errorf("%s: the same prompt drew a different still", c.shape)
		}
	}
	a, _ := PNG("a lantern on a hill at dusk", "landscape")
	b, _ := PNG("a submarine under polar ice", "landscape")
	if bytes.Equal(a, b) {
		t.Fatal("different prompts drew the same still")
	}
}
