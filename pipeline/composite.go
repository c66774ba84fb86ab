package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Names of the files Composite writes into CompositeInput.OutDir.
const (
	VideoFile           = "video.mp4"             // captions burned in (video_url)
	VideoNoCaptionsFile = "video_no_captions.mp4" // clean (video_url_no_captions)
	SRTFile             = "captions.srt"          // caption_url
	VTTFile             = "captions.vtt"
)

// DefaultCompositeResolution is the resolution of an auto video.
const DefaultCompositeResolution = "720p"

// Brand is the part of a brand kit the composite draws.
type Brand struct {
	// Colors are "#RRGGBB" (or "#RGB"): the first fills the lower-third bar
	// behind the captions, the second (if any) is a thin accent line on it.
	Colors []string
	// LogoPath is an image drawn in the top-right corner; "" for none.
	LogoPath string
	// Fonts are the kit's typefaces, preferred first: captions are set in
	// the first one this machine has (captionFont), else the default.
	Fonts []string
	// MotionStyle is how much the presenter moves: MotionCalm,
	// MotionSmooth ("" too), MotionDynamic or MotionEnergetic.
	MotionStyle string
}

// CompositeInput is everything the composite stage of an auto video needs.
type CompositeInput struct {
	Plan        Plan
	SceneClips  []string     // one rendered clip per Plan.Scenes entry, in order
	Lines       []SpokenLine // the narration, from Narrate
	Orientation string       // Landscape ("" too) or Portrait
	Resolution  string       // "" = DefaultCompositeResolution
	FPS         int          // 0 = DefaultFPS
	AvatarID    string       // stock presenter; "" = DefaultAvatar
	AvatarImage string       // picture of the account's own avatar; overrides AvatarID
	// AvatarClip is a lip-synced presenter (the avatar stage's clip, made
	// from the presenter's picture and NarrationTrack); it replaces the
	// still picture. "" for the still picture.
	AvatarClip string
	Brand      *Brand // nil: a neutral translucent bar, no logo
	OutDir     string // where the outputs go (created if needed)
}

// CompositeResult names the files of a finished auto video.
type CompositeResult struct {
	Video           string // OutDir/video.mp4
	VideoNoCaptions string // OutDir/video_no_captions.mp4
	SRT             string // OutDir/captions.srt
	VTT             string // OutDir/captions.vtt
	Cues            []Cue
	Duration        time.Duration
	CaptionFont     string // the kit font the captions are set in; "" for the default
}

// compositeLayout is the geometry and inputs of one composite.
type compositeLayout struct {
	w, h, fps int
	total     time.Duration
	portrait  bool
	barColor  string // ffmpeg colour with alpha
	accent    string // "" for none
	avatar    string // image path
	clip      string // presenter clip path; "" for the still avatar
	ownAvatar bool   // avatar is the account's picture: crop it round
	logo      string // "" for none
	clips     []string
	placed    []PlacedLine
	burnSRT   bool   // captions.srt has cues to burn in
	font      string // caption typeface; "" for libass's default
	motion    string // Brand.MotionStyle
	x264, aac []string
}

// Composite builds the finished auto video: the scene clips cut together at
// the orientation's frame size, the narration mixed at the times PlaceLines
// gives, the presenter (a stock avatar or the account's picture) above a
// lower-third bar in the brand colour, the brand logo, and captions timed
// by the measured length of each spoken line. It writes video.mp4
// (captions burned in), video_no_captions.mp4, captions.srt and
// captions.vtt into in.OutDir: one ffmpeg pass draws and encodes both
// videos, a stream copy gives the clean one the narration encoded for
// video.mp4.
func (t *Tools) Composite(ctx context.Context, in CompositeInput, progress ProgressFunc) (CompositeResult, error) {
	rep := newReporter(progress)
	rep.report(0)
	lay, err := newCompositeLayout(in)
	if err != nil {
		return CompositeResult{}, err
	}
	if err := os.MkdirAll(in.OutDir, 0o755); err != nil {
		return CompositeResult{}, fmt.Errorf("composite: %w", err)
	}
	res := CompositeResult{
		Video:           filepath.Join(in.OutDir, VideoFile),
		VideoNoCaptions: filepath.Join(in.OutDir, VideoNoCaptionsFile),
		SRT:             filepath.Join(in.OutDir, SRTFile),
		VTT:             filepath.Join(in.OutDir, VTTFile),
		Cues:            CaptionCues(lay.placed),
		Duration:        lay.total,
	}
	if err := WriteCaptions(res.Cues, res.SRT, res.VTT); err != nil {
		return CompositeResult{}, err
	}
	lay.burnSRT = len(res.Cues) > 0
	if in.Brand != nil && lay.burnSRT {
		lay.font = t.captionFont(ctx, in.Brand.Fonts)
		res.CaptionFont = lay.font
	}
	if lay.avatar == "" && lay.clip == "" {
		lay.avatar = filepath.Join(in.OutDir, "avatar.png")
		if err := WriteStockAvatar(orDefault(in.AvatarID, DefaultAvatar), lay.avatar); err != nil {
			return CompositeResult{}, fmt.Errorf("composite: %w", err)
		}
	}
	lay.x264, lay.aac = t.x264Args(), aacArgs
	rep.report(2)
	// One pass encodes both videos; the clean one gets no sound there, but
	// the narration encoded for video.mp4, copied by a remux: AAC is
	// encoded once. Run in OutDir so the subtitles filter can name
	// captions.srt without filter-graph escaping; every other path is
	// absolute.
	cleanVideo := filepath.Join(in.OutDir, cleanVideoPart)
	defer os.Remove(cleanVideo) // after a failure; on success it is gone already
	if err := t.ffmpeg(ctx, in.OutDir, compositeArgs(lay, res.Video, cleanVideo), lay.total, rep.span(2, 98)); err != nil {
		return CompositeResult{}, fmt.Errorf("composite: %w", err)
	}
	if err := t.ffmpeg(ctx, "", cleanMuxArgs(cleanVideo, res.Video, res.VideoNoCaptions), 0, nil); err != nil {
		return CompositeResult{}, fmt.Errorf("composite: %w", err)
	}
	if err := os.Remove(cleanVideo); err != nil {
		return CompositeResult{}, fmt.Errorf("composite: %w", err)
	}
	rep.report(99)
	for _, p := range []string{res.Video, res.VideoNoCaptions} {
		if err := checkOutput(p); err != nil {
			return CompositeResult{}, err
		}
	}
	rep.report(100)
	return res, nil
}

// newCompositeLayout checks in and works out the geometry.
func newCompositeLayout(in CompositeInput) (compositeLayout, error) {
	var lay compositeLayout
	if in.OutDir == "" {
		return lay, invalidf("composite: OutDir is empty")
	}
	if len(in.Plan.Scenes) == 0 || len(in.SceneClips) != len(in.Plan.Scenes) {
		return lay, invalidf("composite: %d scene clips for %d scenes", len(in.SceneClips), len(in.Plan.Scenes))
	}
	aspect, err := OrientationAspect(in.Orientation)
	if err != nil {
		return lay, err
	}
	if lay.w, lay.h, err = FrameSize(orDefault(in.Resolution, DefaultCompositeResolution), aspect); err != nil {
		return lay, err
	}
	lay.portrait = in.Orientation == Portrait
	lay.fps = in.FPS
	if lay.fps == 0 {
		lay.fps = DefaultFPS
	}
	lay.total = time.Duration(in.Plan.DurationSeconds) * time.Second
	if lay.total <= 0 {
		return lay, invalidf("composite: plan has no duration")
	}
	abs := func(p string) (string, error) {
		a, err := filepath.Abs(p)
		if err == nil {
			_, err = os.Stat(a)
		}
		if err != nil {
			return "", invalidf("composite: %v", err)
		}
		return a, nil
	}
	for _, c := range in.SceneClips {
		a, err := abs(c)
		if err != nil {
			return lay, err
		}
		lay.clips = append(lay.clips, a)
	}
	lines := make([]SpokenLine, len(in.Lines))
	for i, l := range in.Lines {
		lines[i] = l
		if lines[i].Audio, err = abs(l.Audio); err != nil {
			return lay, err
		}
	}
	lay.placed = PlaceLines(in.Plan, lines)
	lay.barColor = "black@0.55"
	if b := in.Brand; b != nil {
		lay.motion = b.MotionStyle
		if len(b.Colors) > 0 {
			c, err := ffmpegColor(b.Colors[0])
			if err != nil {
				return lay, err
			}
			lay.barColor = c + "@0.85"
		}
		if len(b.Colors) > 1 {
			if lay.accent, err = ffmpegColor(b.Colors[1]); err != nil {
				return lay, err
			}
		}
		if b.LogoPath != "" {
			if lay.logo, err = abs(b.LogoPath); err != nil {
				return lay, err
			}
		}
	}
	if in.AvatarImage != "" {
		if lay.avatar, err = abs(in.AvatarImage); err != nil {
			return lay, err
		}
		lay.ownAvatar = true
	}
	if in.AvatarClip != "" {
		if lay.clip, err = abs(in.AvatarClip); err != nil {
			return lay, err
		}
	}
	return lay, nil
}

// ffmpegColor turns "#RRGGBB" or "#RGB" into ffmpeg's "0xRRGGBB".
func ffmpegColor(c string) (string, error) {
	h := strings.TrimPrefix(strings.TrimSpace(c), "#")
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	if _, err := strconv.ParseUint(h, 16, 32); err != nil || len(h) != 6 {
		return "", invalidf("brand colour %q: use #RRGGBB", c)
	}
	return "0x" + strings.ToUpper(h), nil
}

// cleanVideoPart is the clean video without sound, written into OutDir by
// the composite pass and removed once cleanMuxArgs has added the sound.
const cleanVideoPart = "video_no_captions.part.mp4"

// compositeArgs builds the ffmpeg pass of Composite (run in OutDir): video
// (captioned, with the narration) and cleanVideo (no captions, no sound).
//
// Nearly all of its cost (about 90% of the CPU time at 720p) is the two
// x264 encodes; then the narration's AAC encode (5%), decoding the scenes
// and the filters. The per-frame filters are kept cheap: the bar is one
// frame drawn once that overlay blends (drawbox blended it pixel by pixel,
// at several times the cost, and less exactly), the presenter and logo are
// converted once, and scaling a scene that already has the frame size is a
// pass-through.
func compositeArgs(lay compositeLayout, video, cleanVideo string) []string {
	var args, parts []string
	input := 0
	addInput := func(a ...string) int {
		args = append(args, a...)
		input++
		return input - 1
	}
	short := min(lay.w, lay.h)
	bar := even(float64(short) * 0.16)
	accentH := max(2, even(float64(short)*0.012))
	margin := even(float64(short) * 0.03)
	total := secs(lay.total)

	// Scenes, cut together and held or trimmed to exactly the plan's length.
	var labels string
	for i, c := range lay.clips {
		n := addInput("-i", c)
		parts = append(parts, fmt.Sprintf("[%d:v]%s,fps=%d,format=yuv420p[c%d]", n, fitFilter(lay.w, lay.h), lay.fps, i))
		labels += fmt.Sprintf("[c%d]", i)
	}
	parts = append(parts, fmt.Sprintf("%sconcat=n=%d:v=1:a=0,tpad=stop_mode=clone:stop_duration=%s,trim=duration=%s,setpts=PTS-STARTPTS[scenes]",
		labels, len(lay.clips), total, total))

	// Lower-third bar and accent line: one frame, drawn once, overlaid on
	// every frame (overlay repeats an input's last frame).
	barChain := fmt.Sprintf("color=c=%s:s=%dx%d:r=1:d=1,format=rgba", lay.barColor, lay.w, bar)
	if lay.accent != "" {
		barChain += fmt.Sprintf(",pad=h=%d:y=%d:color=%s", bar+accentH, accentH, lay.accent)
	}
	parts = append(parts, barChain+"[bar]", "[scenes][bar]overlay=x=0:y=H-h[framed]")
	size := even(float64(short) * 0.3)
	var avatarChain string
	if lay.clip != "" {
		// The presenter moves: its frames are scaled at the video's rate,
		// square (no round badge: geq on every frame would cost more than
		// the scenes), and the last frame stays once the clip ends.
		av := addInput("-i", lay.clip)
		avatarChain = fmt.Sprintf("[%d:v]setpts=PTS-STARTPTS,fps=%d,scale=%d:%d:force_original_aspect_ratio=increase,crop=%d:%d,format=rgba",
			av, lay.fps, size, size, size, size)
	} else {
		av := addInput("-i", lay.avatar)
		avatarChain = fmt.Sprintf("[%d:v]scale=%d:%d:force_original_aspect_ratio=increase,crop=%d:%d,format=rgba", av, size, size, size, size)
	}
	if lay.ownAvatar && lay.clip == "" { // a round badge like the stock avatars; runs once, on the one frame
		avatarChain += ",geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='alpha(X,Y)*clip(W/2-hypot(X-W/2+0.5,Y-H/2+0.5),0,1)'"
	}
	parts = append(parts,
		avatarChain+"[avatar]",
		"[framed][avatar]"+presenterOverlay(lay.motion, short, margin, bar+accentH+margin)+"[presented]")
	last := "presented"
	if lay.logo != "" {
		lg := addInput("-i", lay.logo)
		parts = append(parts,
			fmt.Sprintf("[%d:v]scale=%d:%d:force_original_aspect_ratio=decrease,format=rgba[logo]", lg, even(float64(lay.w)*0.25), even(float64(short)*0.1)),
			fmt.Sprintf("[presented][logo]overlay=x=W-w-%d:y=%d[branded]", margin, margin))
		last = "branded"
	}
	if lay.burnSRT {
		parts = append(parts, fmt.Sprintf("[%s]split[clean][tocaption]", last),
			"[tocaption]subtitles=filename="+SRTFile+":force_style='"+captionStyle(lay, bar)+"'[captioned]")
	} else {
		parts = append(parts, fmt.Sprintf("[%s]split[clean][captioned]", last))
	}

	parts = append(parts, narrationMix(lay.placed, total, addInput)...)

	args = append(args, "-filter_complex", strings.Join(parts, ";"))
	args = append(args, "-map", "[captioned]", "-map", "[a]", "-r", strconv.Itoa(lay.fps))
	args = append(args, lay.x264...)
	args = append(args, lay.aac...)
	args = append(args, "-t", total, "-map_metadata", "-1", video)
	args = append(args, "-map", "[clean]", "-r", strconv.Itoa(lay.fps))
	args = append(args, lay.x264...)
	return append(args, "-t", total, "-map_metadata", "-1", cleanVideo)
}

// narrationMix is the filters that mix the narration into [a], mono, of
// length total: every line delayed to its start; addInput adds a line's
// file as an input and returns its index.
func narrationMix(placed []PlacedLine, total string, addInput func(a ...string) int) []string {
	var parts []string
	var mix string
	for i, p := range placed {
		n := addInput("-i", p.Audio)
		parts = append(parts, fmt.Sprintf("[%d:a]aresample=48000,adelay=delays=%d:all=1[l%d]", n, p.Start.Milliseconds(), i))
		mix += fmt.Sprintf("[l%d]", i)
	}
	// One voice is one channel: a stereo copy of it sounds the same and
	// takes the AAC encoder, which runs on ffmpeg's main thread between
	// the frames, twice as long.
	audioTail := fmt.Sprintf("aformat=sample_rates=48000:channel_layouts=mono,apad,atrim=duration=%s[a]", total)
	if len(placed) == 0 {
		return append(parts, "anullsrc=r=48000:cl=mono,"+audioTail)
	}
	return append(parts, fmt.Sprintf("%samix=inputs=%d:duration=longest:normalize=0,%s", mix, len(placed), audioTail))
}

// cleanMuxArgs write clean: the video of cleanVideo and the sound of
// video, both copied.
func cleanMuxArgs(cleanVideo, video, clean string) []string {
	return []string{"-i", cleanVideo, "-i", video, "-map", "0:v:0", "-map", "1:a:0", "-c", "copy",
		"-movflags", "+faststart", "-map_metadata", "-1", "-f", "mp4", clean}
}

// captionStyle is the libass style of burned-in captions: white text with a
// dark outline, centred in the lower-third bar. libass measures sizes on a
// 288-line canvas whatever the video size, so the numbers are fractions of
// the height; portrait frames get a smaller font because they are narrow.
func captionStyle(lay compositeLayout, bar int) string {
	size := 15
	if lay.portrait {
		size = 9
	}
	marginV := int(float64(bar) / float64(lay.h) * 288 * 0.2)
	style := fmt.Sprintf("FontSize=%d,PrimaryColour=&H00FFFFFF,OutlineColour=&H00000000,BorderStyle=1,Outline=1,Shadow=0,Alignment=2,MarginV=%d", size, marginV)
	if lay.font != "" {
		style += ",FontName=" + lay.font
	}
	return style
}
