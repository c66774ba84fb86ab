package pipeline

import (
	"fmt"
	"math"
	"strings"
)

// look is everything the procedural runner derives from a request's text
// fields: palette, motion, and the filters that give a style its look.
type look struct {
	hash    uint64
	palette [6]string // 0xRRGGBB: three background colours, three shape colours
	motion  float64   // 0 (camera fixed) … 1.4 (large movement)
	pre     []string  // filters at the working resolution
	post    []string  // filters at the output resolution
	flags   string    // scaler flags from working to output resolution
}

// scalesLater reports whether frames drawn at the working size look the
// same scaled to the output size now or by a later stage's bicubic scale:
// the look draws nothing at the output size and scales bicubic (pixel
// styles, for one, scale by nearest neighbour).
func (l look) scalesLater() bool {
	return len(l.post) == 0 && l.flags == "bicubic"
}

// colourHues maps colour and scene words in a prompt to a hue in degrees.
var colourHues = map[string]float64{
	"red": 0, "crimson": 350, "fire": 12, "sunset": 20, "orange": 30, "autumn": 28, "gold": 45, "golden": 45,
	"yellow": 55, "desert": 40, "sand": 42, "lime": 90, "green": 120, "forest": 130, "jungle": 125, "grass": 110,
	"teal": 175, "cyan": 185, "ocean": 200, "sea": 200, "water": 195, "sky": 205, "blue": 220, "ice": 195,
	"night": 235, "space": 250, "purple": 275, "violet": 280, "magenta": 305, "pink": 325, "rose": 340,
}

// moods adjust saturation and value: {saturation factor, value factor}.
var moods = map[string][2]float64{
	"night": {1, 0.45}, "dark": {0.9, 0.4}, "midnight": {1, 0.4}, "space": {1, 0.4}, "noir": {0.2, 0.5},
	"bright": {0.8, 1.1}, "sunny": {0.9, 1.1}, "summer": {1, 1.05}, "snow": {0.25, 1.1}, "winter": {0.4, 1},
	"neon": {1.3, 1}, "cyberpunk": {1.3, 0.8}, "pastel": {0.45, 1.1}, "vintage": {0.6, 0.85},
}

// newLook derives the look of a render from its request. Every value comes
// from a hash of the request's fields, the colour and mood words of the
// prompt (minus those the negative prompt names) and the style.
func newLook(req RenderRequest) look {
	h := hashString(req.Model, req.Operation, req.Prompt, req.NegativePrompt, req.Style, fmt.Sprint(req.Seed))
	l := look{hash: h, flags: "bicubic"}

	negative := map[string]bool{}
	for _, w := range words(req.NegativePrompt) {
		negative[w] = true
	}
	hue := float64(h % 360)
	sat, val := 0.65, 0.8
	hueSet := false
	for _, w := range words(req.Prompt) {
		if negative[w] {
			continue
		}
		if hh, ok := colourHues[w]; ok && !hueSet {
			hue, hueSet = hh, true
		}
		if m, ok := moods[w]; ok {
			sat, val = sat*m[0], val*m[1]
		}
	}
	for w := range negative { // steer away from a colour the prompt must avoid
		if hh, ok := colourHues[w]; ok && hueDistance(hue, hh) < 40 {
			hue += 150
		}
	}
	style := strings.ToLower(req.Style)
	if strings.Contains(style, "cyberpunk") {
		hue, sat = 300, sat*1.3
	}
	spread := []float64{40, 160, 200}[(h>>8)%3] // analogous, split or complementary
	l.palette = [6]string{
		hsv(hue, sat, val), hsv(hue+spread/2, sat*0.9, val*0.75), hsv(hue+spread, sat*0.8, val*0.55),
		hsv(hue+180, sat*1.2, val*1.2), hsv(hue+spread+30, sat, val*1.1), hsv(hue+60, sat*0.5, val*1.25),
	}

	switch req.MovementAmplitude {
	case "small":
		l.motion = 0.4
	case "large":
		l.motion = 1.4
	default:
		l.motion = 0.8
	}
	if req.CameraFixed {
		l.motion = 0
	}
	l.pre, l.post, l.flags = styleFilters(style, h)
	return l
}

// styleFilters returns the filters that give a style its look. Styles are
// matched by key word so that every catalog style (and ones added later)
// gets a sensible look; an unknown style only changes the palette.
func styleFilters(style string, h uint64) (pre, post []string, flags string) {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if strings.Contains(style, k) {
				return true
			}
		}
		return false
	}
	flags = "bicubic"
	switch {
	case has("pixel", "8-bit", "8bit", "retro", "voxel"):
		pre = []string{"scale=trunc(iw/16)*2:trunc(ih/16)*2:flags=neighbor"}
		flags = "neighbor"
	case has("comic", "cartoon", "sketch"):
		pre = []string{"edgedetect=mode=colormix:high=0.15:low=0.05", "eq=saturation=1.5"}
	case has("anime", "manga", "illustration"):
		pre = []string{"lutrgb=r='bitand(val,224)':g='bitand(val,224)':b='bitand(val,224)'", "eq=saturation=1.4:contrast=1.1"}
	case has("clay", "plasticine"):
		pre = []string{"gblur=sigma=1.5", "eq=saturation=0.9:brightness=0.03"}
	case has("3d", "render", "cgi"):
		pre = []string{"eq=contrast=1.2:saturation=1.2"}
		post = []string{"unsharp=5:5:0.8"}
	case has("cyberpunk", "neon"):
		pre = []string{"eq=contrast=1.3:saturation=1.5"}
		post = []string{"drawgrid=w=iw:h=4:t=1:color=black@0.25"}
	case has("cinematic", "film", "movie"):
		pre = []string{"eq=contrast=1.1:saturation=0.85", "vignette=angle=PI/5"}
		post = []string{"drawbox=x=0:y=0:w=iw:h=ih/10:color=black:t=fill", "drawbox=x=0:y=ih-ih/10:w=iw:h=ih/10:color=black:t=fill"}
	case has("realistic", "photo", "natural", "documentary"):
		pre = []string{"eq=saturation=0.9"}
		post = []string{fmt.Sprintf("noise=alls=6:allf=t:all_seed=%d", h%math.MaxInt32)}
	case has("watercolor", "painting", "oil", "pastel"):
		pre = []string{"gblur=sigma=2", "eq=saturation=1.2:brightness=0.04"}
	case has("noir", "monochrome", "black and white", "b&w"):
		pre = []string{"hue=s=0", "eq=contrast=1.3"}
	}
	return pre, post, flags
}

// words returns the lower-cased words of s, without punctuation.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r > 127)
	})
}

func hueDistance(a, b float64) float64 {
	d := math.Mod(math.Abs(a-b), 360)
	return min(d, 360-d)
}

// hsv converts hue (degrees), saturation and value (clamped to 0..1) to an
// ffmpeg colour "0xRRGGBB".
func hsv(h, s, v float64) string {
	h = math.Mod(math.Mod(h, 360)+360, 360)
	s, v = min(max(s, 0), 1), min(max(v, 0), 1)
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to := func(f float64) int { return int(math.Round((f + m) * 255)) }
	return fmt.Sprintf("0x%02X%02X%02X", to(r), to(g), to(b))
}

// frac returns a number in [0, 1) from bits k.. of h, for per-shape variety.
func frac(h uint64, k uint) float64 {
	return float64((h>>k)&0xFFF) / 4096
}
