package pipeline

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPresenterClipComposite makes the narration track an avatar model
// hears, then composites a moving presenter clip in place of the still
// picture: over still scenes and a calm (unmoving) badge, the presenter's corner changes from frame
// to frame with the clip and not with the still picture.
func TestPresenterClipComposite(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	ctx := testCtx(t)
	tools := testTools()
	dir := t.TempDir()
	plan, err := NewPlan("A quiet harbour at dawn. Boats leave one by one.", 6, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := tools.Narrate(ctx, plan, "en-us", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	track := filepath.Join(dir, "narration.wav")
	if err := tools.NarrationTrack(ctx, plan, lines, track); err != nil {
		t.Fatal(err)
	}
	if d, err := WAVDuration(track); err != nil || !near(d, 6*time.Second, 100*time.Millisecond) {
		t.Fatalf("narration track: %v (%v), want the plan's 6 s", d, err)
	}
	ffmpeg := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, "ffmpeg", append([]string{"-hide_banner", "-loglevel", "error", "-y"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
		}
	}
	var clips []string
	for _, sc := range plan.Scenes {
		c := filepath.Join(dir, "scene-"+strconv.Itoa(sc.Index)+".mp4")
		ffmpeg("-f", "lavfi", "-i", "color=c=blue:s=180x320:r=12:d="+strconv.Itoa(sc.DurationSeconds), "-pix_fmt", "yuv420p", c)
		clips = append(clips, c)
	}
	presenter := filepath.Join(dir, "presenter.mp4")
	ffmpeg("-f", "lavfi", "-i", "testsrc2=s=96x96:r=12:d=4", "-pix_fmt", "yuv420p", presenter)
	if _, err := tools.CheckPresenter(ctx, presenter); err != nil {
		t.Fatal(err)
	}
	if _, err := tools.CheckPresenter(ctx, track); err == nil {
		t.Error("CheckPresenter took a WAV for a presenter clip")
	}
	corner := func(video string, at string) []byte {
		out, err := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-ss", at, "-i", video,
			"-frames:v", "1", "-vf", "crop=iw/2:ih/3:iw/2:ih*2/3", "-f", "rawvideo", "-pix_fmt", "gray", "-").Output()
		if err != nil || len(out) == 0 {
			t.Fatalf("frame at %s of %s: %v", at, video, err)
		}
		return out
	}
	for _, tc := range []struct {
		clip   string
		moving bool
	}{{presenter, true}, {"", false}} {
		out := filepath.Join(dir, "out-"+strconv.FormatBool(tc.moving))
		res, err := tools.Composite(ctx, CompositeInput{Plan: plan, SceneClips: clips, Lines: lines, Orientation: Portrait,
			Resolution: "180p", FPS: 12, AvatarClip: tc.clip, Brand: &Brand{MotionStyle: MotionCalm}, OutDir: out}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if info := probe(t, res.VideoNoCaptions); !near(info.Duration, 6*time.Second, 200*time.Millisecond) {
			t.Errorf("presenter clip %q: video of %v, want the plan's 6 s (a 4 s clip holds its last frame)", tc.clip, info.Duration)
		}
		moved := !bytes.Equal(corner(res.VideoNoCaptions, "1"), corner(res.VideoNoCaptions, "2"))
		if moved != tc.moving {
			t.Errorf("presenter clip %q: the presenter's corner changed between 1 s and 2 s: %v, want %v", tc.clip, moved, tc.moving)
		}
	}
}
