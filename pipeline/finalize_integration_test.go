package pipeline

import (
	"bytes"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFinalize(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	ctx := testCtx(t)
	tools := testTools()
	dir := t.TempDir()

	// A runner's clip with sound (copied through) and a foreign codec
	// without sound (re-encoded).
	clip := filepath.Join(dir, "clip.mp4")
	if err := (&ProceduralRunner{Tools: tools}).Render(ctx, RenderRequest{Model: "m", Prompt: "p", Resolution: "120p",
		AspectRatio: "16:9", DurationSeconds: 2, FPS: 12, GenerateAudio: true, OutputPath: clip}, nil); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "clip.avi")
	if _, err := (OSExecutor{}).Run(ctx, Command{Name: "ffmpeg", Args: []string{"-v", "error", "-f", "lavfi", "-i",
		"testsrc=s=160x120:r=10:d=1.5", "-c:v", "mpeg4", "-pix_fmt", "yuv420p", foreign}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		clip, poster string
		w, h         int
		dur          time.Duration
		audio        bool
	}{
		{clip, "poster.jpg", 214, 120, 2 * time.Second, true},
		{foreign, "poster.png", 160, 120, 1500 * time.Millisecond, false},
	} {
		var log progressLog
		out := filepath.Join(dir, "out", filepath.Base(tc.clip)+".mp4")
		res, err := tools.Finalize(ctx, tc.clip, out, filepath.Join(dir, "out", tc.poster), log.fn)
		if err != nil {
			t.Fatal(err)
		}
		checkProgress(t, log.values())
		i := res.Info
		if i.VideoCodec != "h264" || i.PixFmt != "yuv420p" || i.Width != tc.w || i.Height != tc.h || i.HasAudio != tc.audio ||
			!near(i.Duration, tc.dur, 200*time.Millisecond) || (tc.audio && i.AudioCodec != "aac") {
			t.Errorf("%s: %+v", tc.clip, i)
		}
		if i != probe(t, res.Video) {
			t.Errorf("result info differs from the file")
		}
		data, _ := os.ReadFile(res.Video)
		if m, d := bytes.Index(data, []byte("moov")), bytes.Index(data, []byte("mdat")); m < 0 || m > d {
			t.Errorf("%s: moov at %d after mdat at %d (no faststart)", res.Video, m, d)
		}
		f, err := os.Open(res.Poster)
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != tc.w || cfg.Height != tc.h || format != map[bool]string{true: "png", false: "jpeg"}[filepath.Ext(tc.poster) == ".png"] {
			t.Errorf("poster %s: %+v %s %v", tc.poster, cfg, format, err)
		}
	}
}

func TestPreviewStill(t *testing.T) {
	requireTools(t, "ffmpeg")
	dir := t.TempDir()
	for _, tc := range []struct {
		orientation string
		w, h        int
	}{{"", 480, 270}, {Portrait, 270, 480}} {
		out := filepath.Join(dir, "preview-"+tc.orientation+".png")
		if err := testTools().PreviewStill(testCtx(t), "a castle on a hill at sunset", tc.orientation, out); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(f)
		f.Close()
		if err != nil || format != "png" || cfg.Width != tc.w || cfg.Height != tc.h {
			t.Errorf("%q: %+v %s %v", tc.orientation, cfg, format, err)
		}
	}
	if err := testTools().PreviewStill(testCtx(t), "x", "diagonal", filepath.Join(dir, "x.png")); err == nil {
		t.Error("bad orientation accepted")
	}
}
