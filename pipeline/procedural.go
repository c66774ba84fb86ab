package pipeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProceduralRunner renders any catalog model on the CPU with ffmpeg, with no
// model weights: the clip is an abstract animation derived
// deterministically from the request (see the package documentation). It
// is what lets a farm run end to end without GPUs; it is not a video model.
type ProceduralRunner struct {
	Tools *Tools // nil: a zero Tools
}

var _ Runner = (*ProceduralRunner)(nil)

func (p *ProceduralRunner) tools() *Tools {
	if p.Tools == nil {
		return &Tools{}
	}
	return p.Tools
}

// Render implements Runner.
func (p *ProceduralRunner) Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error {
	req, w, h, err := req.normalized()
	if err != nil {
		return err
	}
	for _, img := range req.InputImages {
		if _, err := os.Stat(img); err != nil {
			return invalidf("input image: %v", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(req.OutputPath), 0o755); err != nil {
		return fmt.Errorf("procedural render: %w", err)
	}
	rep := newReporter(progress)
	rep.report(0)
	t := p.tools()
	total := time.Duration(req.DurationSeconds * float64(time.Second))
	if err := t.ffmpeg(ctx, "", proceduralArgs(t, req, w, h), total, rep.span(0, 99)); err != nil {
		return fmt.Errorf("procedural render of %s (%s): %w", req.Model, req.Operation, err)
	}
	if err := checkOutput(req.OutputPath); err != nil {
		return err
	}
	rep.report(100)
	return nil
}

// proceduralArgs builds the ffmpeg arguments (after ffmpegCommonArgs) that
// render a normalized request at w×h.
func proceduralArgs(t *Tools, req RenderRequest, w, h int) []string {
	l := newLook(req)
	frames := max(1, int(math.Round(req.DurationSeconds*float64(req.FPS))))
	var inputs []string
	var graph string
	switch {
	case req.Operation == TextToVideo:
		graph = textGraph(l, w, h, req.FPS, req.DurationSeconds)
	case req.Operation == ImageToVideo || len(req.InputImages) == 1:
		inputs = []string{"-i", req.InputImages[0]}
		graph = zoomGraph(l, w, h, req.FPS, frames)
	default: // first_last_frame, multiple_images with 2 or more
		inputs, graph = fadeGraph(l, req.InputImages, w, h, req.FPS, req.DurationSeconds, req.Operation == FirstLastFrame)
	}
	if req.Intermediate && req.Operation == TextToVideo && l.scalesLater() {
		// The composite scales every scene to the video's size with the
		// same bicubic scaler: hand it the frames as drawn, a quarter of
		// the pixels to encode, upload and decode, and the same picture
		// after its scale (PSNR to the lossless frames 43.27 dB, against
		// 43.30 for a clip scaled here; README.md, Performance).
		w, h = workingSize(w, h)
	}
	graph += ";" + tailChain(l, w, h)
	maps := []string{"-map", "[v]"}
	var audio []string
	if req.GenerateAudio {
		graph += ";" + toneSource(l, req.DurationSeconds)
		maps = append(maps, "-map", "[a]")
		audio = aacArgs
	}
	args := append(inputs, "-filter_complex", graph)
	args = append(args, maps...)
	args = append(args, "-frames:v", strconv.Itoa(frames), "-r", strconv.Itoa(req.FPS))
	if req.Intermediate {
		args = append(args, t.intermediateX264Args()...)
	} else {
		args = append(args, t.x264Args()...)
	}
	args = append(args, audio...)
	return append(args, "-t", fnum(req.DurationSeconds), "-map_metadata", "-1", req.OutputPath)
}

// workingSize is the size abstract scenes are drawn at before scaling to
// the output: at most 360 lines, same aspect. Gradients and soft shapes
// scale up cleanly, and it keeps 4k renders fast.
func workingSize(w, h int) (int, int) {
	wh := min(h, 360)
	return max(2, even(float64(wh)*float64(w)/float64(h))), wh
}

// textGraph draws text_to_video: a slowly rotating three-colour gradient
// with three soft shapes drifting on Lissajous paths and a gentle hue drift.
func textGraph(l look, w, h, fps int, d float64) string {
	ww, wh := workingSize(w, h)
	speed := 0.004 + 0.012*l.motion
	parts := []string{fmt.Sprintf("gradients=s=%dx%d:r=%d:d=%s:n=3:c0=%s:c1=%s:c2=%s:seed=%d:speed=%s[bg]",
		ww, wh, fps, fnum(d), l.palette[0], l.palette[1], l.palette[2], l.hash>>32, fnum(speed))}
	amp := min(0.5+0.3*l.motion, 1)
	prev := "bg"
	for i := range 3 {
		k := uint(12 * i)
		size := max(4, even(float64(min(ww, wh))*(0.2+0.25*frac(l.hash, k))))
		r := fnum(float64(size) / 2)
		alpha := fmt.Sprintf("200*clip((%[1]s-hypot(X-%[1]s,Y-%[1]s))/(%[1]s*0.25),0,1)", r) // soft disc
		if (l.hash>>(k+3))&3 == 0 {
			alpha = fmt.Sprintf("200*clip((%[1]s*0.2-abs(hypot(X-%[1]s,Y-%[1]s)-%[1]s*0.7))/(%[1]s*0.08),0,1)", r) // ring
		}
		// The disc never changes: draw it once (geq is per-pixel and slow),
		// convert it once, and loop that frame. The loop is endless, so the
		// overlay ends with the background (eof_action=endall), exactly
		// where it ended when every frame was drawn.
		parts = append(parts,
			fmt.Sprintf("color=c=%s:s=%dx%d:r=%d:d=%s,format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='%s',format=yuva420p,loop=loop=-1:size=1[s%d]",
				l.palette[3+i], size, size, fps, fnum(d), alpha, i),
			fmt.Sprintf("[%s][s%d]overlay=x='(W-w)/2*(1+%s*sin(2*PI*t/%s+%s))':y='(H-h)/2*(1+%s*cos(2*PI*t/%s+%s))':eval=frame:eof_action=endall[o%d]",
				prev, i, fnum(amp), fnum(3+6*frac(l.hash, k+1)), fnum(6.28*frac(l.hash, k+2)),
				fnum(amp), fnum(4+7*frac(l.hash, k+4)), fnum(6.28*frac(l.hash, k+5)), i))
		prev = fmt.Sprintf("o%d", i)
	}
	// The hue drifts in steps of 1/8 s: hue rebuilds a 64K-entry table
	// whenever the angle changes, which on every frame was a third of the
	// drawing. Steps are under 1.5° (PSNR 61 dB to a drift on every frame).
	parts = append(parts, fmt.Sprintf("[%s]hue=H='0.25*sin(2*PI*floor(t*8)/8/%s)'[base]", prev, fnum(8+8*frac(l.hash, 40))))
	return strings.Join(parts, ";")
}

// fitFilter scales and crops an input to exactly w×h (cover). The scaler
// is named: ffmpeg before 5.0 defaulted to bilinear, and intermediate
// scenes rely on the composite scaling them as the runner would have.
func fitFilter(w, h int) string {
	return fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=increase:flags=bicubic,crop=%d:%d,setsar=1", w, h, w, h)
}

// zoomGraph animates one still image (input 0) with a slow zoom or pan
// (none when the camera is fixed), chosen from the request hash.
func zoomGraph(l look, w, h, fps, frames int) string {
	k := 2 // draw from a 2x image so sub-pixel moves do not jitter
	if h > 1080 {
		k = 1
	}
	a := fnum(0.25 * l.motion)
	z, x, y := "1", "0", "0"
	centre := "iw/2-(iw/zoom/2)"
	middle := "ih/2-(ih/zoom/2)"
	n := strconv.Itoa(frames)
	if l.motion > 0 {
		switch l.hash % 4 {
		case 0: // push in
			z, x, y = "1+"+a+"*on/"+n, centre, middle
		case 1: // pull out
			z, x, y = "1+"+a+"-"+a+"*on/"+n, centre, middle
		case 2: // pan right
			z, x, y = "1+"+a, "(iw-iw/zoom)*on/"+n, middle
		default: // pan left
			z, x, y = "1+"+a, "(iw-iw/zoom)*(1-on/"+n+")", middle
		}
	}
	return fmt.Sprintf("[0:v]%s,zoompan=z='%s':x='%s':y='%s':d=%d:s=%dx%d:fps=%d[base]",
		fitFilter(w*k, h*k), z, x, y, frames, w, h, fps)
}

// fadeTransitions are the xfade transitions the procedural runner picks
// from; morph-like ones first.
var fadeTransitions = []string{"fade", "dissolve", "smoothleft", "circleopen", "radial", "fadegrays", "smoothup", "wipeleft"}

// fadeGraph crossfades from image to image: first_last_frame holds the first
// frame for a quarter of the clip, morphs for half and holds the last;
// multiple_images shows each image in turn with short transitions. The
// inputs are looped images of exactly the lengths that make the clip d long.
func fadeGraph(l look, images []string, w, h, fps int, d float64, firstLast bool) ([]string, string) {
	n := len(images)
	td := min(0.6, d/float64(n)*0.4)
	lengths := make([]float64, n)
	offsets := make([]float64, n) // offsets[i]: when the fade into image i starts
	if firstLast {
		td = d * 0.5
		offsets[1] = d * 0.25
		lengths[0], lengths[1] = offsets[1]+td, d-offsets[1]
	} else {
		seg := (d + float64(n-1)*td) / float64(n)
		for i := range images {
			lengths[i] = seg
			offsets[i] = float64(i) * (seg - td)
		}
	}
	var inputs, parts []string
	for i, img := range images {
		inputs = append(inputs, "-loop", "1", "-framerate", strconv.Itoa(fps), "-t", fnum(lengths[i]), "-i", img)
		parts = append(parts, fmt.Sprintf("[%d:v]%s,fps=%d,format=yuv420p[i%d]", i, fitFilter(w, h), fps, i))
	}
	prev := "i0"
	for i := 1; i < n; i++ {
		out := fmt.Sprintf("x%d", i)
		if i == n-1 {
			out = "base"
		}
		tr := fadeTransitions[(l.hash+uint64(i))%uint64(len(fadeTransitions))]
		if firstLast {
			tr = fadeTransitions[l.hash%2] // fade or dissolve: a morph, not a wipe
		}
		parts = append(parts, fmt.Sprintf("[%s][i%d]xfade=transition=%s:duration=%s:offset=%s[%s]", prev, i, tr, fnum(td), fnum(offsets[i]), out))
		prev = out
	}
	return inputs, strings.Join(parts, ";")
}

// tailChain applies the style and brings [base] to the output size and
// pixel format as [v]. The last frame is held a little so that rounding in
// the sources never makes the clip a frame short (-frames:v cuts it).
func tailChain(l look, w, h int) string {
	f := append([]string{}, l.pre...)
	f = append(f, fmt.Sprintf("scale=%d:%d:flags=%s", w, h, l.flags))
	f = append(f, l.post...)
	f = append(f, "tpad=stop_mode=clone:stop_duration=1", "setsar=1", "format=yuv420p")
	return "[base]" + strings.Join(f, ",") + "[v]"
}

// toneSource is the generate_audio soundtrack: a soft two-note chord whose
// root comes from the request hash, with a slow swell.
func toneSource(l look, d float64) string {
	root := 110 * math.Pow(2, float64(l.hash%24)/12)
	return fmt.Sprintf("aevalsrc=exprs='0.08*sin(2*PI*%s*t)*(0.6+0.4*sin(2*PI*t/4))+0.05*sin(2*PI*%s*t)':s=48000:d=%s[a]",
		fnum(root), fnum(root*1.5), fnum(d))
}
