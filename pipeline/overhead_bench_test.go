package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// The pipeline overhead comparison: a whole auto video against one plain
// ffmpeg encode of the same length and frame size at the pipeline's frame
// rate (DefaultFPS), with two readings of "plain":
//
//   - PlainEncode30s720p: ffmpeg with no encoder options, as an operator
//     would type it (`ffmpeg -i in out.mp4`: libx264 at its defaults,
//     preset medium, CRF 23);
//   - PlainEncodeDelivery30s720p: the settings every delivered file of the
//     pipeline uses (Tools{}: x264 veryfast, CRF 21, yuv420p, faststart).
//
//	go test -run '^$' -bench 'AutoVideo30s720p|PlainEncode' -benchtime 1x -count 3 ./pipeline/
//
// The auto video runs as the one-machine farm of `make run` runs it (see
// autoVideo). All three report cpu-ms, the CPU time of the programs they
// ran: on a machine shared with other work it varies far less than the
// wall time. README.md has the figures.

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
	plan, parallel, composite time.Duration
	sceneCount                int
}

// autoVideo renders a whole auto video into dir as the one-machine farm
// of `make run` does: plan, then the narration and the scenes, as many at
// once as the machine has cores (the local agent advertises a CPU slot
// per core and each of these tasks takes one), then the composite with
// captions. Scenes are rendered as intermediate clips
// (RenderRequest.Intermediate), as an auto video's scene task asks for
// them.
func autoVideo(ctx context.Context, t *Tools, dir string) (CompositeResult, overheadStages, error) {
	var st overheadStages
	start := time.Now()
	plan, err := NewPlan(overheadPrompt, overheadSeconds, PlanOptions{})
	if err != nil {
		return CompositeResult{}, st, err
	}
	st.plan = time.Since(start)

	start = time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.NumCPU()) // Go blocks while every slot is taken: tasks start in placement order
	var lines []SpokenLine
	g.Go(func() (err error) {
		lines, err = t.Narrate(gctx, plan, DefaultVoice, filepath.Join(dir, "tts"), nil)
		return err
	})
	runner := &ProceduralRunner{Tools: t}
	clips := make([]string, len(plan.Scenes))
	for i, sc := range plan.Scenes {
		clips[i] = filepath.Join(dir, "scenes", fmt.Sprintf("scene-%04d.mp4", sc.Index+1))
		g.Go(func() error {
			return runner.Render(gctx, RenderRequest{Model: "auto-scene", Prompt: sc.Visual, Seed: int64(sc.Index),
				Resolution: DefaultCompositeResolution, AspectRatio: "16:9", DurationSeconds: float64(sc.DurationSeconds),
				OutputPath: clips[i], Intermediate: true}, nil)
		})
	}
	if err := g.Wait(); err != nil {
		return CompositeResult{}, st, err
	}
	st.parallel, st.sceneCount = time.Since(start), len(clips)

	start = time.Now()
	res, err := t.Composite(ctx, CompositeInput{
		Plan: plan, SceneClips: clips, Lines: lines, Orientation: Landscape,
		Brand:  &Brand{Colors: []string{"#1E3A5F", "#F2A900"}},
		OutDir: filepath.Join(dir, "out"),
	}, nil)
	st.composite = time.Since(start)
	return res, st, err
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
// Per-stage wall times are reported as plan-ms, parallel-ms (tts and the
// scenes, side by side) and composite-ms, means per video.
func BenchmarkAutoVideo30s720p(b *testing.B) {
	t := overheadTools(b, "ffmpeg", "ffprobe", "espeak-ng")
	ctx := context.Background()
	var sum overheadStages
	var cpu time.Duration
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
		sum.parallel += st.parallel
		sum.composite += st.composite
		sum.sceneCount = st.sceneCount
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(sum.plan), "plan-ms")
	b.ReportMetric(ms(sum.parallel), "parallel-ms")
	b.ReportMetric(ms(sum.composite), "composite-ms")
	b.ReportMetric(ms(cpu), "cpu-ms")
	b.ReportMetric(float64(sum.sceneCount), "scenes")
	b.ReportMetric(float64(len(last.Cues)), "cues")
}

// plainEncodeSource is overheadSeconds of a 1280×720 test pattern at
// DefaultFPS, as ffmpeg input arguments.
func plainEncodeSource() []string {
	return []string{"-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=" + strconv.Itoa(DefaultFPS),
		"-t", strconv.Itoa(overheadSeconds)}
}

// benchPlainEncode times ffmpeg encoding plainEncodeSource with encoder
// (after ffmpegCommonArgs) into an MP4.
func benchPlainEncode(b *testing.B, encoder ...string) {
	t := overheadTools(b, "ffmpeg", "ffprobe")
	ctx := context.Background()
	dir := b.TempDir()
	out := filepath.Join(dir, "plain.mp4")
	args := append(append(plainEncodeSource(), encoder...), out)
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		cpu0 := childCPU()
		if err := t.ffmpeg(ctx, dir, args, overheadSeconds*time.Second, nil); err != nil {
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

// BenchmarkPlainEncode30s720p is one plain ffmpeg encode of 30 s of
// 1280×720 video: no encoder options, ffmpeg's defaults for MP4.
func BenchmarkPlainEncode30s720p(b *testing.B) { benchPlainEncode(b) }

// BenchmarkPlainEncodeDelivery30s720p is the same encode with the
// pipeline's delivery settings, the stricter comparison.
func BenchmarkPlainEncodeDelivery30s720p(b *testing.B) { benchPlainEncode(b, (&Tools{}).x264Args()...) }
