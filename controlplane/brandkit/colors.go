// Package brandkit owns what a brand kit is made of apart from its storage:
// the colour and font rules that POST /v1/brand-kits validates with, and the
// draft that POST /v1/brand-kits/from-url extracts from a site's page (its
// name, theme and CSS colours, fonts, logo and description). It does no I/O:
// the API fetches the page through the address guard and hands the bytes here.
package brandkit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/css"
)

// NormalizeColor turns a CSS hex colour ("#abc", "#AABBCC", or with an alpha
// digit pair, which is dropped) into "#aabbcc". The composite draws opaque
// colours, so a kit stores them opaque.
func NormalizeColor(c string) (string, error) {
	h, ok := strings.CutPrefix(strings.TrimSpace(c), "#")
	if !ok {
		return "", fmt.Errorf("colour %q must start with #", c)
	}
	switch len(h) {
	case 3, 4:
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	case 6, 8:
		h = h[:6]
	default:
		return "", fmt.Errorf("colour %q must be #RGB or #RRGGBB", c)
	}
	if _, err := strconv.ParseUint(h, 16, 32); err != nil {
		return "", fmt.Errorf("colour %q has a character that is not a hex digit", c)
	}
	return "#" + strings.ToLower(h), nil
}

// rgbFunc turns the arguments of rgb()/rgba() ("12, 34, 56" or "12 34 56 / 50%")
// into "#rrggbb".
func rgbFunc(args []string) (string, bool) {
	if len(args) < 3 {
		return "", false
	}
	var out [3]byte
	for i, a := range args[:3] {
		var v float64
		var err error
		if p, ok := strings.CutSuffix(a, "%"); ok {
			v, err = strconv.ParseFloat(p, 64)
			v *= 2.55
		} else {
			v, err = strconv.ParseFloat(a, 64)
		}
		if err != nil || v < 0 || v > 255.5 {
			return "", false
		}
		out[i] = byte(math.Round(v))
	}
	return fmt.Sprintf("#%02x%02x%02x", out[0], out[1], out[2]), true
}

// grey reports whether a colour has so little saturation (white, black and
// the greys of body text and borders) that it says nothing of a brand.
func grey(hex string) bool {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	r, g, b := float64(v>>16&0xff), float64(v>>8&0xff), float64(v&0xff)
	return max(r, g, b)-min(r, g, b) < 24
}

// cssScan collects what a style sheet or style attribute says of colours and
// fonts, counting each colour once per use.
type cssScan struct {
	colors map[string]int
	order  []string // colours in first-seen order, to break ties
	fonts  map[string]int
	forder []string
}

func newCSSScan() *cssScan { return &cssScan{colors: map[string]int{}, fonts: map[string]int{}} }

func (s *cssScan) color(c string) {
	if s.colors[c] == 0 {
		s.order = append(s.order, c)
	}
	s.colors[c]++
}

func (s *cssScan) font(f string) {
	if s.fonts[f] == 0 {
		s.forder = append(s.forder, f)
	}
	s.fonts[f]++
}

// genericFonts are CSS keywords, not typefaces.
var genericFonts = map[string]bool{
	"serif": true, "sans-serif": true, "monospace": true, "cursive": true, "fantasy": true, "system-ui": true,
	"ui-serif": true, "ui-sans-serif": true, "ui-monospace": true, "ui-rounded": true, "emoji": true, "math": true,
	"inherit": true, "initial": true, "unset": true, "revert": true, "-apple-system": true, "blinkmacsystemfont": true,
}

// scan tokenizes CSS (a style sheet, or one element's declarations when
// inline) and records the hex and rgb() colours of declaration values and the
// first family of each font-family.
func (s *cssScan) scan(src []byte, inline bool) {
	// NewInputString copies: NewInputBytes writes a terminating zero past the
	// end of the slice it gets, which would change the caller's buffer (the
	// HTML tokenizer's, say).
	l := css.NewLexer(parse.NewInputString(string(src)))
	inBlock := inline // declarations, not selectors
	prop, inValue := "", false
	var family []string // words of the first font family
	var fn []string     // arguments of an open rgb() or rgba()
	inRGB, familyDone := false, false
	endDecl := func() {
		if f := strings.TrimSpace(strings.Join(family, " ")); prop == "font-family" && f != "" && len(f) <= 100 && !genericFonts[strings.ToLower(f)] {
			s.font(f)
		}
		prop, inValue, family, familyDone, inRGB = "", false, nil, false, false
	}
	for {
		tt, data := l.Next()
		switch tt {
		case css.ErrorToken:
			endDecl()
			return
		case css.LeftBraceToken:
			endDecl()
			inBlock = true
		case css.RightBraceToken:
			endDecl()
			inBlock = inline
		case css.SemicolonToken:
			endDecl()
		case css.CustomPropertyValueToken:
			if inBlock {
				// --brand: #e63946 holds its value as raw text: scan it as a value.
				s.scan(append([]byte("custom:"), data...), true)
			}
		case css.IdentToken:
			switch {
			case !inBlock:
			case !inValue:
				prop = strings.ToLower(string(data))
			case prop == "font-family" && !familyDone:
				family = append(family, string(data))
			}
		case css.StringToken:
			if inValue && prop == "font-family" && !familyDone && family == nil {
				family = []string{strings.Trim(string(data), `"'`)}
			}
		case css.ColonToken:
			inValue = inBlock && prop != ""
		case css.CommaToken:
			familyDone = familyDone || family != nil
		case css.HashToken:
			if c, err := NormalizeColor(string(data)); err == nil && inValue {
				s.color(c)
			}
		case css.FunctionToken:
			f := strings.ToLower(string(data))
			inRGB, fn = inValue && (f == "rgb(" || f == "rgba("), nil
		case css.NumberToken, css.PercentageToken:
			if inRGB {
				fn = append(fn, string(data))
			}
		case css.RightParenthesisToken:
			if inRGB {
				if c, ok := rgbFunc(fn); ok {
					s.color(c)
				}
				inRGB = false
			}
		}
	}
}
