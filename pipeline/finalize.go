package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FinalizeResult describes the delivered files of a manual video.
type FinalizeResult struct {
	Video  string    // the delivered MP4
	Poster string    // the poster still
	Info   MediaInfo // of Video
}

// Finalize turns a runner's clip into the delivered MP4 (H.264, yuv420p,
// AAC audio if the clip has sound, index at the front for streaming) at
// outVideo, and a poster still at outPoster (JPEG, or PNG when the name ends
// in .png) taken a third of the way in. Video already in H.264/yuv420p and
// audio already in AAC are copied, not re-encoded.
func (t *Tools) Finalize(ctx context.Context, clip, outVideo, outPoster string, progress ProgressFunc) (FinalizeResult, error) {
	rep := newReporter(progress)
	rep.report(0)
	in, err := t.Probe(ctx, clip)
	if err != nil {
		return FinalizeResult{}, fmt.Errorf("finalize: %w", err)
	}
	if in.VideoCodec == "" {
		return FinalizeResult{}, invalidf("finalize: %s has no video stream", clip)
	}
	for _, p := range []string{outVideo, outPoster} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return FinalizeResult{}, fmt.Errorf("finalize: %w", err)
		}
	}
	if err := t.ffmpeg(ctx, "", t.finalizeArgs(clip, outVideo, in), in.Duration, rep.span(5, 85)); err != nil {
		return FinalizeResult{}, fmt.Errorf("finalize %s: %w", clip, err)
	}
	if err := t.ffmpeg(ctx, "", posterArgs(outVideo, outPoster, in.Duration/3), 0, nil); err != nil {
		return FinalizeResult{}, fmt.Errorf("finalize poster: %w", err)
	}
	for _, p := range []string{outVideo, outPoster} {
		if err := checkOutput(p); err != nil {
			return FinalizeResult{}, err
		}
	}
	out, err := t.Probe(ctx, outVideo)
	if err != nil {
		return FinalizeResult{}, fmt.Errorf("finalize: %w", err)
	}
	rep.report(100)
	return FinalizeResult{Video: outVideo, Poster: outPoster, Info: out}, nil
}

// finalizeArgs builds the encode/mux of a clip described by in.
func (t *Tools) finalizeArgs(clip, out string, in MediaInfo) []string {
	args := []string{"-i", clip, "-map", "0:v:0", "-map", "0:a:0?"}
	if in.VideoCodec == "h264" && in.PixFmt == "yuv420p" {
		args = append(args, "-c:v", "copy", "-movflags", "+faststart")
	} else {
		args = append(args, t.x264Args()...)
	}
	switch {
	case !in.HasAudio:
	case in.AudioCodec == "aac":
		args = append(args, "-c:a", "copy")
	default:
		args = append(args, aacArgs...)
	}
	return append(args, "-map_metadata", "-1", "-f", "mp4", out)
}

// posterArgs grabs one frame at `at` into a still.
func posterArgs(video, out string, at time.Duration) []string {
	return append([]string{"-ss", secs(at), "-i", video}, stillArgs(out)...)
}

// stillArgs write one frame to out: PNG when the name ends in .png,
// otherwise JPEG.
func stillArgs(out string) []string {
	args := []string{"-frames:v", "1", "-update", "1"}
	if !strings.EqualFold(filepath.Ext(out), ".png") {
		args = append(args, "-q:v", "3", "-f", "image2", "-c:v", "mjpeg")
	}
	return append(args, out)
}
