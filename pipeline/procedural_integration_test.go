package pipeline

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestIntermediateSceneScaledLater: an intermediate text_to_video clip
// comes at the size it is drawn at, and scaled to the output size the way
// the composite scales scenes (fitFilter) it shows the picture the runner
// delivers at that size: close to it, and far from another seed's.
func TestIntermediateSceneScaledLater(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	dir := t.TempDir()
	render := func(name string, seed int64, intermediate bool) string {
		req := RenderRequest{Model: "auto-scene", Prompt: "a lighthouse on a stormy coast", Seed: seed, Resolution: "480p",
			AspectRatio: "16:9", DurationSeconds: 1, FPS: 12, OutputPath: filepath.Join(dir, name), Intermediate: intermediate}
		if err := (&ProceduralRunner{Tools: testTools()}).Render(testCtx(t), req, nil); err != nil {
			t.Fatal(err)
		}
		return req.OutputPath
	}
	inter, delivered, other := render("inter.mp4", 3, true), render("delivered.mp4", 3, false), render("other.mp4", 4, false)
	if info := probe(t, inter); info.Width != 640 || info.Height != 360 {
		t.Fatalf("intermediate clip %dx%d, want the working size 640x360", info.Width, info.Height)
	}
	if info := probe(t, delivered); info.Width != 854 || info.Height != 480 {
		t.Fatalf("delivered clip %dx%d, want 854x480", info.Width, info.Height)
	}
	psnr := func(ref string) float64 {
		out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", inter, "-i", ref, "-lavfi",
			"[0:v]"+fitFilter(854, 480)+"[a];[a][1:v]psnr", "-f", "null", "-").CombinedOutput()
		if err != nil {
			t.Fatalf("ffmpeg psnr: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`PSNR .* average:([0-9.]+|inf)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no PSNR in ffmpeg's output:\n%s", out)
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if same, diff := psnr(delivered), psnr(other); same < 35 || diff > 25 {
		t.Errorf("PSNR to the delivered clip %.1f dB (want ≥ 35), to another seed's %.1f dB (want ≤ 25)", same, diff)
	}
}
