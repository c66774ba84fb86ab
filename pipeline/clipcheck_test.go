package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckClip(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	tests := []struct {
		name         string
		w, h         int
		seconds      float64 // 0: not a video at all
		res          string
		intermediate bool
		msg          string // "" = accepted
		wantW, wantH int
		wantSeconds  float64
	}{
		{"as asked", 640, 360, 2, "360p", false, "", 640, 360, 2},
		{"1088 for 1080 passes", 1920, 1088, 1, "1080p", false, "", 1920, 1088, 1},
		{"longer is trimmed", 640, 360, 4, "360p", false, "", 640, 360, 2},
		{"larger is scaled down", 1280, 720, 2, "360p", false, "", 640, 360, 2},
		{"too short", 640, 360, 1, "360p", false, "too short", 0, 0, 0},
		{"other aspect ratio", 480, 480, 2, "360p", false, "another aspect ratio", 0, 0, 0},
		{"smaller", 426, 240, 2, "360p", false, "smaller than asked", 0, 0, 0},
		{"smaller intermediate passes", 426, 240, 2, "360p", true, "", 426, 240, 2},
		{"garbage", 0, 0, 0, "360p", false, "not a video ffprobe can read", 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			tools := testTools()
			clip := filepath.Join(t.TempDir(), "clip.mp4")
			if tc.seconds == 0 {
				if err := os.WriteFile(clip, []byte("<html>upstream error</html>"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := tools.ffmpeg(ctx, "", []string{"-f", "lavfi", "-i",
				fmt.Sprintf("testsrc2=s=%dx%d:r=24:d=%g", tc.w, tc.h, tc.seconds),
				"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip}, 0, nil); err != nil {
				t.Fatal(err)
			}
			req := RenderRequest{Model: "m", Prompt: "p", Resolution: tc.res, AspectRatio: "16:9", DurationSeconds: 2,
				OutputPath: clip, Intermediate: tc.intermediate}
			if tc.res == "1080p" {
				req.DurationSeconds = 1
			}
			c, err := tools.CheckClip(ctx, req)
			if tc.msg != "" {
				if !errors.Is(err, ErrBadClip) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("CheckClip = %v, want ErrBadClip saying %q", err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := probe(t, clip)
			if got.Width != tc.wantW || got.Height != tc.wantH || !near(got.Duration, time.Duration(tc.wantSeconds*float64(time.Second)), 100*time.Millisecond) {
				t.Errorf("clip is now %dx%d %v, want %dx%d %gs", got.Width, got.Height, got.Duration, tc.wantW, tc.wantH, tc.wantSeconds)
			}
			if c.Trimmed != (tc.seconds > 2) || c.Downscaled != (tc.w > 1000 && tc.res == "360p") {
				t.Errorf("check = %+v", c)
			}
		})
	}
}

func TestCheckClipWithoutFFprobe(t *testing.T) {
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(clip, []byte("bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := &Tools{FFprobe: filepath.Join(t.TempDir(), "no-ffprobe")}
	_, err := tools.CheckClip(context.Background(), RenderRequest{Model: "m", Prompt: "p", Resolution: "360p", AspectRatio: "16:9",
		DurationSeconds: 2, OutputPath: clip})
	if !errors.Is(err, ErrToolMissing) || errors.Is(err, ErrBadClip) {
		t.Fatalf("CheckClip = %v, want ErrToolMissing (install ffprobe), not a bad clip", err)
	}
}
