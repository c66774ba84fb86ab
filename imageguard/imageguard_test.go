package imageguard

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		w, h     int
		want     string // "" for nil
		tooLarge bool
	}{
		{64, 48, "", false},
		{MaxSide, MaxPixels / MaxSide, "", false},
		{MaxSide + 1, 16, "8193x16 pixels (0.1 megapixels); images may be at most 8192 pixels a side and 50 megapixels", true},
		{8000, 8000, "8000x8000 pixels (64.0 megapixels); images may be at most 8192 pixels a side and 50 megapixels", true},
		{16000, 16000, "16000x16000 pixels (256.0 megapixels)", true},
		{0, 10, "0x10 pixels: it has none", false},
	} {
		err := Check(tc.w, tc.h)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%dx%d: %v, want nil", tc.w, tc.h, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || errors.Is(err, ErrTooLarge) != tc.tooLarge {
			t.Errorf("%dx%d: %v, want %q (too large %v)", tc.w, tc.h, err, tc.want, tc.tooLarge)
		}
	}
}

func TestSize(t *testing.T) {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	if w, h, err := Size("image/png", bytes.NewReader(b.Bytes())); err != nil || w != 40 || h != 30 {
		t.Errorf("png: %dx%d, %v", w, h, err)
	}
	if _, _, err := Size("image/png", bytes.NewReader(b.Bytes()[:12])); err == nil {
		t.Error("a cut header was read")
	}
	if Readable("text/plain") {
		t.Error("text/plain is readable")
	}
	if _, _, err := Size("text/plain", strings.NewReader("x")); err == nil {
		t.Error("text/plain was read")
	}
}
