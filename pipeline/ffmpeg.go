package pipeline

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ffmpegCommonArgs come before every ffmpeg invocation: no prompts, no
// banner, machine-readable progress on stdout, errors only on stderr.
var ffmpegCommonArgs = []string{"-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-progress", "pipe:1", "-nostats"}

// ffmpeg runs ffmpeg with ffmpegCommonArgs followed by args, in dir, and
// reports progress as the share of total written so far.
func (t *Tools) ffmpeg(ctx context.Context, dir string, args []string, total time.Duration, progress ProgressFunc) error {
	full := append(append([]string(nil), ffmpegCommonArgs...), args...)
	_, err := t.exec().Run(ctx, Command{
		Name:         t.ffmpegBin(),
		Args:         full,
		Dir:          dir,
		OnStdoutLine: ffmpegProgress(total, progress),
	})
	return err
}

// x264Args are the video encoder settings shared by every delivered file:
// H.264 in yuv420p (plays everywhere), with the index at the front of the
// file so players can start before the download ends.
func (t *Tools) x264Args() []string {
	crf := t.CRF
	if crf == 0 {
		crf = 21
	}
	return []string{
		"-c:v", "libx264", "-preset", orDefault(t.Preset, "veryfast"), "-crf", strconv.Itoa(crf),
		"-pix_fmt", "yuv420p", "-movflags", "+faststart",
	}
}

// aacArgs are the audio encoder settings of every delivered file.
var aacArgs = []string{"-c:a", "aac", "-b:a", "128k", "-ar", "48000"}

// secs formats a duration in seconds for ffmpeg options ("2.5", "10").
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// fnum formats a number for a filter expression with at most 4 decimals.
func fnum(f float64) string {
	return strconv.FormatFloat(f, 'f', 4, 64)
}

// checkOutput verifies that a tool left a non-empty file at path.
func checkOutput(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return fmt.Errorf("%w: %s", ErrNoOutput, path)
	}
	return nil
}
