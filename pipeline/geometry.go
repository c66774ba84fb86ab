package pipeline

import (
	"math"
	"strconv"
	"strings"
)

// Orientations of an auto video.
const (
	Landscape = "landscape" // 16:9
	Portrait  = "portrait"  // 9:16
)

// OrientationAspect returns the aspect ratio of an auto-video orientation;
// "" means landscape.
func OrientationAspect(orientation string) (string, error) {
	switch orientation {
	case "", Landscape:
		return "16:9", nil
	case Portrait:
		return "9:16", nil
	}
	return "", invalidf("orientation %q: allowed are %q and %q", orientation, Landscape, Portrait)
}

// ResolutionLines returns the number of lines a resolution name stands for:
// "480p", "540p", "720p", "1080p", "1440p", "2160p" or any "<n>p" with an
// even n from 120 to 4320, and "2k" (1440), "4k" (2160), "8k" (4320).
func ResolutionLines(resolution string) (int, error) {
	r := strings.ToLower(strings.TrimSpace(resolution))
	switch r {
	case "2k":
		return 1440, nil
	case "4k":
		return 2160, nil
	case "8k":
		return 4320, nil
	}
	if n, err := strconv.Atoi(strings.TrimSuffix(r, "p")); err == nil && strings.HasSuffix(r, "p") &&
		n >= 120 && n <= 4320 && n%2 == 0 {
		return n, nil
	}
	return 0, invalidf("resolution %q: use 480p, 540p, 720p, 1080p, 4k or another <n>p", resolution)
}

// ParseAspect parses an aspect ratio "W:H" (e.g. "16:9", "9:16", "21:9").
func ParseAspect(aspect string) (w, h int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(aspect), ":")
	w, errW := strconv.Atoi(a)
	h, errH := strconv.Atoi(b)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 || w > 100 || h > 100 {
		return 0, 0, invalidf("aspect_ratio %q: use W:H such as 16:9, 9:16, 1:1, 4:3, 3:4 or 21:9", aspect)
	}
	return w, h, nil
}

// FrameSize returns the pixel size of a render. The resolution names the
// shorter side, as video models and phones use it: 1080p is 1920x1080 at
// 16:9, 1080x1920 at 9:16 and 1080x1080 at 1:1; 4k at 16:9 is 3840x2160.
// The longer side is rounded to the nearest even number (yuv420p needs even
// sizes): 480p at 16:9 is 854x480.
func FrameSize(resolution, aspect string) (width, height int, err error) {
	lines, err := ResolutionLines(resolution)
	if err != nil {
		return 0, 0, err
	}
	aw, ah, err := ParseAspect(aspect)
	if err != nil {
		return 0, 0, err
	}
	if aw >= ah {
		return even(float64(lines) * float64(aw) / float64(ah)), lines, nil
	}
	return lines, even(float64(lines) * float64(ah) / float64(aw)), nil
}

// even rounds to the nearest even integer.
func even(x float64) int {
	return 2 * int(math.Round(x/2))
}
