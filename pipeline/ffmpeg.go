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
	return []string{
		"-c:v", "libx264", "-preset", orDefault(t.Preset, "veryfast"), "-crf", strconv.Itoa(t.crf()),
		"-pix_fmt", "yuv420p", "-movflags", "+faststart",
	}
}

// crf is the configured x264 CRF (Tools.CRF, default 21).
func (t *Tools) crf() int {
	if t.CRF == 0 {
		return 21
	}
	return t.CRF
}

// Encoder settings of intermediate clips (RenderRequest.Intermediate):
// the fastest x264 preset, at a CRF low enough that the loss is small next
// to that of the encode that follows. On a 720p scene ultrafast takes under
// a third of veryfast's CPU time and the clip is about 3 times larger, and
// the delivery encode of it is as close to the lossless frames (PSNR 43.2
// dB) as that of a scene encoded with the delivery settings.
const (
	intermediatePreset = "ultrafast"
	intermediateCRF    = 17
)

// intermediateX264Args are the video encoder settings of a clip that a
// later stage encodes again: intermediatePreset, and intermediateCRF or
// the configured CRF where that is lower (finer).
func (t *Tools) intermediateX264Args() []string {
	return []string{
		"-c:v", "libx264", "-preset", intermediatePreset, "-crf", strconv.Itoa(min(intermediateCRF, t.crf())),
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
