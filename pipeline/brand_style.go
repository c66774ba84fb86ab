package pipeline

import (
	"context"
	"fmt"
	"strings"
)

// Motion styles of a brand kit (Brand.MotionStyle): how much the presenter
// badge moves. "" is MotionSmooth.
const (
	MotionCalm      = "calm"      // still
	MotionSmooth    = "smooth"    // a gentle bob, the default
	MotionDynamic   = "dynamic"   // twice as far, faster
	MotionEnergetic = "energetic" // three times as far, faster still
)

// presenterBob is how the presenter badge bobs for a motion style on a
// frame whose short side is short pixels: amplitude in pixels (0: still)
// and frequency in Hz. An unknown style moves like MotionSmooth.
func presenterBob(style string, short int) (amplitude, hz float64) {
	base := max(1, float64(short)/240)
	switch style {
	case MotionCalm:
		return 0, 0
	case MotionDynamic:
		return 2 * base, 1.6
	case MotionEnergetic:
		return 3 * base, 2.2
	}
	return base, 1.2
}

// captionFont returns the first of a kit's font families that this
// machine has (fontconfig, which libass draws with, lists it), or "" for
// libass's default. A family whose name could break out of the subtitles
// filter's style string is skipped. Without fc-list the default is used:
// a missing typeface must not fail a render.
func (t *Tools) captionFont(ctx context.Context, fonts []string) string {
	if len(fonts) == 0 {
		return ""
	}
	out, err := t.exec().Run(ctx, Command{Name: "fc-list", Args: []string{"--format", "%{family}\n"}})
	if err != nil {
		return ""
	}
	return pickFont(fonts, string(out))
}

// pickFont returns the first of fonts that fcList (fc-list's families, one
// font a line, a line's names comma-separated) names, ignoring case, and
// whose name is safe in a libass style string.
func pickFont(fonts []string, fcList string) string {
	have := map[string]bool{}
	for _, line := range strings.Split(fcList, "\n") {
		for _, f := range strings.Split(line, ",") {
			if f = strings.TrimSpace(f); f != "" {
				have[strings.ToLower(f)] = true
			}
		}
	}
	for _, f := range fonts {
		if safeFontName(f) && have[strings.ToLower(f)] {
			return f
		}
	}
	return ""
}

// safeFontName reports whether f can go into force_style as it is:
// letters, digits, spaces, dots, hyphens and underscores only (commas end
// a style field, quotes and colons end the filter option).
func safeFontName(f string) bool {
	if f == "" || len(f) > 100 {
		return false
	}
	for _, r := range f {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ', r == '.', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// presenterOverlay is the overlay filter that puts the presenter badge on
// the frame, margin pixels from the right edge and lift pixels above the
// bottom, bobbing as presenterBob says; a still badge is placed once, not
// on every frame.
func presenterOverlay(style string, short, margin, lift int) string {
	amp, hz := presenterBob(style, short)
	if amp == 0 {
		return fmt.Sprintf("overlay=x=W-w-%d:y=H-h-%d", margin, lift)
	}
	return fmt.Sprintf("overlay=x=W-w-%d:y='H-h-%d+%s*sin(2*PI*t*%s)':eval=frame", margin, lift, fnum(amp), fnum(hz))
}
