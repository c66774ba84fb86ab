package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestProceduralRunnerOperations(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	dir := t.TempDir()
	imgs := testImages(t, dir, 3)
	cases := []struct {
		name    string
		req     RenderRequest
		w, h    int
		seconds float64
	}{
		{"text landscape", RenderRequest{Operation: TextToVideo, Prompt: "a red fox in a snowy forest at night", Style: "anime", AspectRatio: "16:9", DurationSeconds: 2}, 320, 180, 2},
		{"text portrait audio", RenderRequest{Prompt: "neon city", Style: "cyberpunk", AspectRatio: "9:16", DurationSeconds: 1.5, GenerateAudio: true}, 180, 320, 1.5},
		{"image zoom square", RenderRequest{Operation: ImageToVideo, Prompt: "slow zoom", AspectRatio: "1:1", DurationSeconds: 2, InputImages: imgs[:1]}, 180, 180, 2},
		{"first last 4:3", RenderRequest{Operation: FirstLastFrame, Prompt: "morph", AspectRatio: "4:3", DurationSeconds: 2, InputImages: imgs[:2], Style: "cinematic"}, 240, 180, 2},
		{"multiple 21:9", RenderRequest{Operation: MultipleImages, Prompt: "slideshow", AspectRatio: "21:9", DurationSeconds: 3, InputImages: imgs}, 420, 180, 3},
		{"multiple one 3:4", RenderRequest{Operation: MultipleImages, Prompt: "one image", AspectRatio: "3:4", DurationSeconds: 1, InputImages: imgs[:1], CameraFixed: true}, 180, 240, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Model = "test-model"
			tc.req.Resolution = "180p"
			tc.req.FPS = 12
			tc.req.OutputPath = filepath.Join(t.TempDir(), "clip.mp4")
			var log progressLog
			if err := (&ProceduralRunner{Tools: testTools()}).Render(testCtx(t), tc.req, log.fn); err != nil {
				t.Fatal(err)
			}
			checkProgress(t, log.values())
			info := probe(t, tc.req.OutputPath)
			want := time.Duration(tc.seconds * float64(time.Second))
			if !near(info.Duration, want, 500*time.Millisecond) {
				t.Errorf("duration %v, want %v", info.Duration, want)
			}
			if info.Width != tc.w || info.Height != tc.h || info.VideoCodec != "h264" || info.PixFmt != "yuv420p" {
				t.Errorf("got %+v, want %dx%d h264 yuv420p", info, tc.w, tc.h)
			}
			if info.HasAudio != tc.req.GenerateAudio {
				t.Errorf("has audio %v, want %v", info.HasAudio, tc.req.GenerateAudio)
			}
		})
	}
}

func TestProceduralRunnerIsDeterministic(t *testing.T) {
	requireTools(t, "ffmpeg")
	dir := t.TempDir()
	render := func(name string, seed int64, intermediate ...bool) []byte {
		req := RenderRequest{Model: "m", Prompt: "waves at sunset", Seed: seed, Resolution: "120p", AspectRatio: "16:9",
			DurationSeconds: 1, FPS: 8, OutputPath: filepath.Join(dir, name), Intermediate: len(intermediate) > 0}
		if err := (&ProceduralRunner{Tools: testTools()}).Render(testCtx(t), req, nil); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(req.OutputPath)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := render("a.mp4", 7), render("b.mp4", 7), render("c.mp4", 8)
	if !bytes.Equal(a, b) {
		t.Error("same request gave different clips")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same clip")
	}
	if d, e := render("d.mp4", 7, true), render("e.mp4", 7, true); !bytes.Equal(d, e) || bytes.Equal(a, d) {
		t.Error("intermediate clips: same request gave different clips, or the delivery settings were used")
	}
}
