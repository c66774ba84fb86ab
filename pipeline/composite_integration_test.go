package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astisub"
)

// TestAutoVideoEndToEnd runs plan → tts → scene renders → composite for a
// 10 s portrait video at a small size and checks every output.
func TestAutoVideoEndToEnd(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng", "fc-list")
	ctx := testCtx(t)
	tools := testTools()
	dir := t.TempDir()
	// The kit names a typeface no machine has, then one this one has.
	fcList, err := exec.Command("fc-list", "--format", "%{family}\n").Output()
	if err != nil {
		t.Fatal(err)
	}
	var family string
	for _, line := range strings.Split(string(fcList), "\n") {
		if f := strings.TrimSpace(strings.Split(line, ",")[0]); safeFontName(f) {
			family = f
			break
		}
	}
	if family == "" {
		t.Fatalf("fc-list names no font:\n%s", fcList)
	}

	plan, err := NewPlan("A tour of an old lighthouse on a stormy coast. The keeper climbs the stairs at dusk.", 10, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := tools.Narrate(ctx, plan, "en-us+f3", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var clips []string
	for _, sc := range plan.Scenes {
		clip := filepath.Join(dir, fmt.Sprintf("scene-%d.mp4", sc.Index))
		err := (&ProceduralRunner{Tools: tools}).Render(ctx, RenderRequest{Model: "auto-scene", Prompt: sc.Visual,
			Resolution: "180p", AspectRatio: "9:16", DurationSeconds: float64(sc.DurationSeconds), FPS: 12, OutputPath: clip,
			Intermediate: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		clips = append(clips, clip)
	}
	logo := writePNG(t, filepath.Join(dir, "logo.png"), 64, 32, color.RGBA{255, 255, 255, 255}, color.RGBA{0, 0, 0, 255})

	var log progressLog
	res, err := tools.Composite(ctx, CompositeInput{
		Plan: plan, SceneClips: clips, Lines: lines, Orientation: Portrait, Resolution: "180p", FPS: 12,
		AvatarID: "av_stock_ben", Brand: &Brand{Colors: []string{"#FF6600", "#222"}, LogoPath: logo,
			Fonts: []string{"No Such Typeface", family}, MotionStyle: MotionEnergetic},
		OutDir: filepath.Join(dir, "out"),
	}, log.fn)
	if err != nil {
		t.Fatal(err)
	}
	checkProgress(t, log.values())
	if res.CaptionFont != family {
		t.Errorf("captions set in %q, want the kit's first installed font %q", res.CaptionFont, family)
	}

	for _, v := range []string{res.Video, res.VideoNoCaptions} {
		info := probe(t, v)
		if info.Width != 180 || info.Height != 320 || !info.HasAudio || info.VideoCodec != "h264" || info.AudioCodec != "aac" {
			t.Errorf("%s: %+v, want 180x320 portrait h264 with aac audio", filepath.Base(v), info)
		}
		if !near(info.Duration, 10*time.Second, 500*time.Millisecond) {
			t.Errorf("%s: duration %v, want 10s", filepath.Base(v), info.Duration)
		}
	}

	// The narration is encoded once: both files carry the same AAC packets.
	if a, b := audioPackets(t, res.Video), audioPackets(t, res.VideoNoCaptions); !bytes.Equal(a, b) {
		t.Errorf("the two videos' audio streams differ:\n%s\n%s", a, b)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	} else {
		for _, e := range entries {
			if e.Name() == cleanVideoPart {
				t.Errorf("%s left in OutDir", e.Name())
			}
		}
	}

	if len(res.Cues) == 0 {
		t.Fatal("no caption cues")
	}
	for _, path := range []string{res.SRT, res.VTT} {
		subs, err := astisub.OpenFile(path)
		if err != nil {
			t.Fatalf("%s does not parse: %v", path, err)
		}
		if len(subs.Items) != len(res.Cues) {
			t.Errorf("%s has %d cues, want %d", filepath.Base(path), len(subs.Items), len(res.Cues))
		}
		var prevEnd time.Duration
		for _, it := range subs.Items {
			if it.StartAt < prevEnd || it.EndAt <= it.StartAt || it.EndAt > 10*time.Second || it.String() == "" {
				t.Errorf("%s: bad cue %v–%v %q", filepath.Base(path), it.StartAt, it.EndAt, it.String())
			}
			prevEnd = it.EndAt
		}
	}

	// Captions are burned into video.mp4 only: a frame in the middle of the
	// first cue differs between the two files.
	mid := (res.Cues[0].Start + res.Cues[0].End) / 2
	if bytes.Equal(grayFrame(t, res.Video, mid), grayFrame(t, res.VideoNoCaptions, mid)) {
		t.Error("video.mp4 and video_no_captions.mp4 show the same frame during a caption")
	}
}

// audioPackets is the MD5 of video's audio packets, copied, not decoded.
func audioPackets(t *testing.T, video string) []byte {
	t.Helper()
	out, err := OSExecutor{}.Run(context.Background(), Command{Name: "ffmpeg", Args: []string{
		"-v", "error", "-i", video, "-map", "0:a:0", "-c", "copy", "-f", "md5", "-"}})
	if err != nil || len(out) == 0 {
		t.Fatalf("audio packets of %s: %v", video, err)
	}
	return out
}

// grayFrame decodes the frame at `at` as raw 8-bit gray pixels.
func grayFrame(t *testing.T, video string, at time.Duration) []byte {
	t.Helper()
	out, err := OSExecutor{}.Run(context.Background(), Command{Name: "ffmpeg", Args: []string{
		"-v", "error", "-ss", secs(at), "-i", video, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"}})
	if err != nil || len(out) == 0 {
		t.Fatalf("grab frame of %s: %v", video, err)
	}
	return out
}

// TestCompositeOwnAvatarLandscape covers the other branches: landscape, an
// account's own (non-square) avatar picture, no brand kit.
func TestCompositeOwnAvatarLandscape(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	ctx := testCtx(t)
	tools := testTools()
	dir := t.TempDir()
	plan, err := NewPlan("Bread rises in a warm kitchen.", 5, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := tools.Narrate(ctx, plan, "en-gb+m3", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	clip := filepath.Join(dir, "scene.mp4")
	if err := (&ProceduralRunner{Tools: tools}).Render(ctx, RenderRequest{Model: "auto-scene", Prompt: plan.Scenes[0].Visual,
		Resolution: "180p", AspectRatio: "16:9", DurationSeconds: 5, FPS: 12, OutputPath: clip}, nil); err != nil {
		t.Fatal(err)
	}
	face := writePNG(t, filepath.Join(dir, "me.png"), 90, 120, color.RGBA{250, 220, 180, 255}, color.RGBA{60, 40, 30, 255})
	res, err := tools.Composite(ctx, CompositeInput{Plan: plan, SceneClips: []string{clip}, Lines: lines, Resolution: "180p",
		FPS: 12, AvatarImage: face, OutDir: filepath.Join(dir, "out")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info := probe(t, res.Video)
	if info.Width != 320 || info.Height != 180 || !info.HasAudio || !near(info.Duration, 5*time.Second, 500*time.Millisecond) {
		t.Errorf("video %+v, want 320x180 landscape with audio, 5s", info)
	}
}
