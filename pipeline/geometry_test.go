package pipeline

import (
	"errors"
	"testing"
)

func TestFrameSize(t *testing.T) {
	for _, tc := range []struct {
		res, aspect string
		w, h        int
	}{
		{"480p", "16:9", 854, 480},
		{"540p", "16:9", 960, 540},
		{"720p", "16:9", 1280, 720},
		{"1080p", "16:9", 1920, 1080},
		{"4k", "16:9", 3840, 2160},
		{"4K", "16:9", 3840, 2160},
		{"1080p", "9:16", 1080, 1920},
		{"720p", "1:1", 720, 720},
		{"480p", "4:3", 640, 480},
		{"480p", "3:4", 480, 640},
		{"1080p", "21:9", 2520, 1080},
		{"540p", "9:16", 540, 960},
		{"180p", "16:9", 320, 180},
		{"180p", "21:9", 420, 180},
	} {
		w, h, err := FrameSize(tc.res, tc.aspect)
		if err != nil || w != tc.w || h != tc.h {
			t.Errorf("FrameSize(%q, %q) = %d, %d, %v; want %d, %d", tc.res, tc.aspect, w, h, err, tc.w, tc.h)
		}
		if w%2 != 0 || h%2 != 0 {
			t.Errorf("FrameSize(%q, %q) is odd", tc.res, tc.aspect)
		}
	}
	for _, tc := range [][2]string{{"720", "16:9"}, {"721p", "16:9"}, {"10p", "16:9"}, {"hd", "16:9"}, {"720p", "16x9"}, {"720p", "0:1"}, {"720p", ""}} {
		if _, _, err := FrameSize(tc[0], tc[1]); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("FrameSize(%q, %q): %v, want ErrInvalidRequest", tc[0], tc[1], err)
		}
	}
}

func TestOrientationAspect(t *testing.T) {
	for in, want := range map[string]string{"": "16:9", "landscape": "16:9", "portrait": "9:16"} {
		if got, err := OrientationAspect(in); got != want || err != nil {
			t.Errorf("OrientationAspect(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := OrientationAspect("square"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("square: %v", err)
	}
}
