package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The pipeline overhead comparison: a whole auto video against one plain
// ffmpeg encode of the same length and frame size, with the encoder
// settings every pipeline encode uses (Tools{}: x264 preset veryfast,
// CRF 21, yuv420p, faststart), at the pipeline's frame rate (DefaultFPS).
//
//	go test -run '^$' -bench 'AutoVideo30s720p|PlainEncode30s720p' -benchtime 1x -count 3 ./pipeline/
//
// Both run the stages one after another on this machine. In a farm the
// scenes (GPU tasks) and tts run in parallel on different nodes, so the
// video's wall time there is plan + max(tts, slowest scene) + composite.
// Both also report cpu-ms, the CPU time of the programs they ran: on a
// machine shared with other work it varies far less than the wall time.
// README.md has the figures.

const overheadSeconds = 30

// overheadPrompt is a typical auto-video prompt: enough text for about
// half the narration, the rest filled with stock sentences.
const overheadPrompt = "A thirty second tour of a solar lantern for campers. " +
	"It charges in the sun all day and lights the tent all night. " +
	"The handle folds flat, the shell shrugs off rain, and one button cycles three brightness levels."

// overheadTools skips b when a tool is missing (fails when
// VIDFARM_REQUIRE_TOOLS is set) and returns production encoder settings.
func overheadTools(b *testing.B, names ...string) *Tools {
	b.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
				b.Fatalf("%s is not installed and VIDFARM_REQUIRE_TOOLS is set", n)
			}
			b.Skipf("%s is not installed", n)
		}
	}
	return &Tools{}
}

// overheadStages is the wall time of each stage of one auto video.
type overheadStages struct {
	plan, tts, scenes, composite time.Duration
	slowestScene                 time.Duration
	sceneCount                   int
}

// autoVideo runs plan → tts → every scene with the procedural runner →
// composite with captions, one after another, into dir. Scenes are
// rendered as intermediate clips (RenderRequest.Intermediate), as an auto
// video's scene task should ask for them.
func autoVideo(ctx context.Context, t *Tools, dir string) (CompositeResult, overheadStages, error) {
	var st overheadStages
	start := time.Now()
	plan, err := NewPlan(overheadPrompt, overheadSeconds, PlanOptions{})
	if err != nil {
		return CompositeResult{}, st, err
	}
	st.plan = time.Since(start)

	start = time.Now()
	lines, err := t.Narrate(ctx, plan, DefaultVoice, filepath.Join(dir, "tts"), nil)
	if err != nil {
		return CompositeResult{}, st, err
	}
	st.tts = time.Since(start)

	start = time.Now()
	runner := &ProceduralRunner{Tools: t}
	clips := make([]string, len(plan.Scenes))
	for i, sc := range plan.Scenes {
		sceneStart := time.Now()
		clips[i] = filepath.Join(dir, "scenes", fmt.Sprintf("scene-%04d.mp4", sc.Index+1))
		err := runner.Render(ctx, RenderRequest{Model: "auto-scene", Prompt: sc.Visual, Seed: int64(sc.Index),
			Resolution: DefaultCompositeResolution, AspectRatio: "16:9", DurationSeconds: float64(sc.DurationSeconds),
			OutputPath: clips[i], Intermediate: true}, nil)
		if err != nil {
			return CompositeResult{}, st, err
		}
		st.slowestScene = max(st.slowestScene, time.Since(sceneStart))
	}
	st.scenes, st.sceneCount = time.Since(start), len(clips)

	start = time.Now()
	res, err := t.Composite(ctx, CompositeInput{
		Plan: plan, SceneClips: clips, Lines: lines, Orientation: Landscape,
		Brand:  &Brand{Colors: []string{"#1E3A5F", "#F2A900"}},
		OutDir: filepath.Join(dir, "out"),
	}, nil)
	st.composite = time.Since(start)
	return res, st, err
}

// plainEncodeArgs encode overheadSeconds of a 1280×720 test pattern at
// DefaultFPS with the pipeline's x264 settings (after ffmpegCommonArgs).
func plainEncodeArgs(t *Tools, out string) []string {
	args := []string{"-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=" + strconv.Itoa(DefaultFPS),
		"-t", strconv.Itoa(overheadSeconds)}
	args = append(args, t.x264Args()...)
	return append(args, out)
}

// overheadCheck probes out: 1280×720 H.264, overheadSeconds long.
func overheadCheck(b *testing.B, ctx context.Context, t *Tools, out string, wantAudio bool) {
	b.Helper()
	info, err := t.Probe(ctx, out)
	if err != nil {
		b.Fatal(err)
	}
	d := info.Duration - overheadSeconds*time.Second
	if info.Width != 1280 || info.Height != 720 || info.VideoCodec != "h264" || info.HasAudio != wantAudio ||
		d > 500*time.Millisecond || d < -500*time.Millisecond {
		b.Fatalf("%s: %+v, want 1280x720 h264, %d s, audio %v", filepath.Base(out), info, overheadSeconds, wantAudio)
	}
}

// BenchmarkAutoVideo30s720p is a whole 30 s landscape 720p auto video.
// Per-stage wall times are reported as plan-ms, tts-ms, scenes-ms and
// composite-ms (means per video); farm-ms is what the video would take
// with its tasks spread over idle nodes like this machine: plan, then tts
// and every scene in parallel (the slowest of them), then composite.
func BenchmarkAutoVideo30s720p(b *testing.B) {
	t := overheadTools(b, "ffmpeg", "ffprobe", "espeak-ng")
	ctx := context.Background()
	var sum overheadStages
	var farm, cpu time.Duration
	var last CompositeResult
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, err := os.MkdirTemp(b.TempDir(), "auto")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := childCPU()
		res, st, err := autoVideo(ctx, t, dir)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += childCPU() - cpu0
		overheadCheck(b, ctx, t, res.Video, true)
		overheadCheck(b, ctx, t, res.VideoNoCaptions, true)
		if len(res.Cues) == 0 {
			b.Fatal("no captions")
		}
		last = res
		sum.plan += st.plan
		sum.tts += st.tts
		sum.scenes += st.scenes
		sum.composite += st.composite
		farm += st.plan + max(st.tts, st.slowestScene) + st.composite
		sum.sceneCount = st.sceneCount
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(sum.plan), "plan-ms")
	b.ReportMetric(ms(sum.tts), "tts-ms")
	b.ReportMetric(ms(sum.scenes), "scenes-ms")
	b.ReportMetric(ms(sum.composite), "composite-ms")
	b.ReportMetric(ms(farm), "farm-ms")
	b.ReportMetric(ms(cpu), "cpu-ms")
	b.ReportMetric(float64(sum.sceneCount), "scenes")
	b.ReportMetric(float64(len(last.Cues)), "cues")
}

// BenchmarkPlainEncode30s720p is one plain ffmpeg encode of 30 s of
// 1280×720 video with the pipeline's encoder settings.
func BenchmarkPlainEncode30s720p(b *testing.B) {
	t := overheadTools(b, "ffmpeg", "ffprobe")
	ctx := context.Background()
	dir := b.TempDir()
	out := filepath.Join(dir, "plain.mp4")
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		cpu0 := childCPU()
		if err := t.ffmpeg(ctx, dir, plainEncodeArgs(t, out), overheadSeconds*time.Second, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += childCPU() - cpu0
		overheadCheck(b, ctx, t, out, false)
		if err := os.Remove(out); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms")
}
