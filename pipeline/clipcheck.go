package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// ErrBadClip means a runner's clip is not what the request asked for and
// cannot honestly be made so: not a video, too short, too small, another
// aspect ratio. The message says what came back and what to change.
var ErrBadClip = errors.New("pipeline: the runner's clip does not match the request")

// Tolerances of CheckClip. Models render whole frames, often in sizes that
// are multiples of 8 or 16 (1088 for 1080), so small differences pass as
// they are.
const (
	clipSizeTolerance   = 0.02 // of each side
	clipAspectTolerance = 0.02 // of width/height
	clipShortTolerance  = 0.10 // of the duration, and at least clipMinSlack
	clipLongTolerance   = 0.05 // longer than this (and clipMinSlack) is trimmed
	clipMinSlack        = 250 * time.Millisecond
)

// ClipCheck is what CheckClip found and did.
type ClipCheck struct {
	Info       MediaInfo // the clip as it came back
	Trimmed    bool      // cut to the requested duration
	Downscaled bool      // scaled down to the requested frame size
}

// CheckClip probes the clip a runner wrote to req.OutputPath and holds it
// to the request. What can be fixed honestly is fixed in place: a clip
// longer than asked is cut to the duration, a larger one in the same aspect
// ratio is scaled down (a codec other than H.264 is left to Finalize, which
// re-encodes it). What cannot fails with ErrBadClip: no video stream, a
// file ffprobe cannot read, a clip shorter than asked (stretching or
// looping would sell the customer less than they paid for), another aspect
// ratio, or one smaller than asked (upscaling). An intermediate clip (an
// auto video's scene) may be smaller, as RenderRequest.Intermediate allows.
func (t *Tools) CheckClip(ctx context.Context, req RenderRequest) (ClipCheck, error) {
	req, w, h, err := req.normalized()
	if err != nil {
		return ClipCheck{}, err
	}
	info, err := t.Probe(ctx, req.OutputPath)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrToolMissing) {
			return ClipCheck{}, err
		}
		return ClipCheck{}, fmt.Errorf("%w: the output is not a video ffprobe can read: %v", ErrBadClip, err)
	}
	c := ClipCheck{Info: info}
	want := time.Duration(req.DurationSeconds * float64(time.Second))
	got := fmt.Sprintf("%dx%d, %.2f s", info.Width, info.Height, info.Duration.Seconds())
	asked := fmt.Sprintf("%dx%d (%s %s), %.2f s", w, h, req.Resolution, req.AspectRatio, want.Seconds())
	switch {
	case info.VideoCodec == "" || info.Width <= 0 || info.Height <= 0:
		return c, fmt.Errorf("%w: the output has no video stream", ErrBadClip)
	case info.Duration < want-max(clipMinSlack, time.Duration(float64(want)*clipShortTolerance)):
		return c, fmt.Errorf("%w: the clip is %s, the request %s: too short; check the frame count and fps the runner sends "+
			"(inputs num_frames, fps) and the longest clip the model makes", ErrBadClip, got, asked)
	case !sameAspect(info.Width, info.Height, w, h):
		return c, fmt.Errorf("%w: the clip is %s, the request %s: another aspect ratio; map width and height in the runner's inputs",
			ErrBadClip, got, asked)
	case !req.Intermediate && float64(info.Height) < float64(h)*(1-clipSizeTolerance):
		return c, fmt.Errorf("%w: the clip is %s, the request %s: smaller than asked, and upscaling would not be honest; "+
			"map width and height in the runner's inputs or offer the model only at resolutions it renders", ErrBadClip, got, asked)
	}
	c.Trimmed = info.Duration > want+max(clipMinSlack, time.Duration(float64(want)*clipLongTolerance))
	c.Downscaled = float64(info.Height) > float64(h)*(1+clipSizeTolerance)
	if !c.Trimmed && !c.Downscaled {
		return c, nil
	}
	if err := t.normalizeClip(ctx, req.OutputPath, c, want, w, h); err != nil {
		return c, err
	}
	return c, nil
}

// sameAspect compares two frame shapes within clipAspectTolerance.
func sameAspect(w1, h1, w2, h2 int) bool {
	a, b := float64(w1)/float64(h1), float64(w2)/float64(h2)
	return math.Abs(a-b)/b <= clipAspectTolerance
}

// normalizeClip trims and scales the clip at path in place.
func (t *Tools) normalizeClip(ctx context.Context, path string, c ClipCheck, want time.Duration, w, h int) error {
	tmp := path + ".normalized.mp4"
	args := []string{"-i", path, "-map", "0:v:0", "-map", "0:a:0?"}
	if c.Trimmed {
		args = append(args, "-t", secs(want))
	}
	if c.Downscaled {
		args = append(args, "-vf", "scale="+strconv.Itoa(w)+":"+strconv.Itoa(h)+":flags=lanczos,setsar=1")
	}
	args = append(args, t.x264Args()...)
	if c.Info.HasAudio {
		args = append(args, aacArgs...)
	}
	args = append(args, "-f", "mp4", tmp)
	if err := t.ffmpeg(ctx, "", args, want, nil); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("normalise the runner's clip: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("normalise the runner's clip: %w", err)
	}
	return nil
}
