package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "runner.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeModelScript is a stand-in model server: it saves its request next to
// the output, reports progress, logs noise and writes a "clip".
const fakeModelScript = `
req=$(cat)
out=$(printf '%s' "$req" | sed -n 's/.*"output_path":"\([^"]*\)".*/\1/p')
echo "loading weights"
echo "progress 10"
echo "progress 55.5"
echo "warning: something on stderr" >&2
printf '%s' "$req" > "$out.request.json"
printf 'not really an mp4' > "$out"
echo "progress 100"
`

func TestExternalRunner(t *testing.T) {
	requireTools(t, "sh", "sed")
	dir := t.TempDir()
	script := writeScript(t, dir, fakeModelScript)
	out := filepath.Join(dir, "clips", "clip.mp4")
	var log progressLog
	req := RenderRequest{Model: "hunyuan-video", Operation: ImageToVideo, Prompt: `a "quoted" prompt`, Seed: 9, Style: "anime",
		Resolution: "720p", AspectRatio: "9:16", DurationSeconds: 5, InputImages: []string{filepath.Join(dir, "in.png")}, OutputPath: out}
	if err := (&ExternalRunner{Command: []string{script}}).Render(testCtx(t), req, log.fn); err != nil {
		t.Fatal(err)
	}
	if got := log.values(); !reflect.DeepEqual(got, []int{0, 10, 55, 99, 100}) {
		t.Errorf("progress %v", got)
	}
	raw, err := os.ReadFile(out + ".request.json")
	if err != nil {
		t.Fatal(err)
	}
	var got ExternalRequest
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("request %s: %v", raw, err)
	}
	want := ExternalRequest{Protocol: ExternalProtocol, RenderRequest: req, Width: 720, Height: 1280}
	want.FPS = DefaultFPS
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request\n got %+v\nwant %+v", got, want)
	}
	for _, key := range []string{`"protocol":"vidfarm.render.v1"`, `"model":"hunyuan-video"`, `"operation":"image_to_video"`, `"input_images":[`, `"width":720`, `"height":1280`, `"duration_seconds":5`, `"fps":24`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("request %s lacks %s", raw, key)
		}
	}
}

func TestExternalRunnerFailures(t *testing.T) {
	requireTools(t, "sh", "sed")
	dir := t.TempDir()
	req := RenderRequest{Model: "m", Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 5, OutputPath: filepath.Join(dir, "clip.mp4")}

	failing := writeScript(t, dir, "cat >/dev/null; echo 'progress 20'; echo 'loading' >&2; echo 'CUDA out of memory' >&2; exit 3\n")
	err := (&ExternalRunner{Command: []string{failing}}).Render(testCtx(t), req, nil)
	var te *ToolError
	if !errors.As(err, &te) || !errors.Is(err, ErrToolFailed) || te.ExitCode != 3 || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Errorf("failing runner: %v", err)
	}

	os.WriteFile(req.OutputPath, []byte("stale clip of an earlier try"), 0o644)
	silent := writeScript(t, dir, "cat >/dev/null; echo 'progress 100'\n")
	if err := (&ExternalRunner{Command: []string{silent}}).Render(testCtx(t), req, nil); !errors.Is(err, ErrNoOutput) {
		t.Errorf("runner without output: %v", err)
	}

	if err := (&ExternalRunner{}).Render(testCtx(t), req, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("runner without command: %v", err)
	}
	if err := (&ExternalRunner{Command: []string{filepath.Join(dir, "missing")}}).Render(testCtx(t), req, nil); !errors.Is(err, ErrToolMissing) {
		t.Errorf("missing runner: %v", err)
	}
}

func TestExternalRunnerCancel(t *testing.T) {
	requireTools(t, "sh", "sleep")
	dir := t.TempDir()
	slow := writeScript(t, dir, "cat >/dev/null; echo 'progress 5'; sleep 30; echo 'progress 50'\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := RenderRequest{Model: "m", Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 5, OutputPath: filepath.Join(dir, "clip.mp4")}
	start := time.Now()
	err := (&ExternalRunner{Command: []string{slow}}).Render(ctx, req, func(p int) {
		if p == 5 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled render: %v after %v", err, time.Since(start))
	}
}

// funcRunner is a Runner made of a function.
type funcRunner func(context.Context, RenderRequest, ProgressFunc) error

func (f funcRunner) Render(ctx context.Context, r RenderRequest, p ProgressFunc) error {
	return f(ctx, r, p)
}

func TestRouter(t *testing.T) {
	var got []string
	named := func(name string) Runner {
		return funcRunner(func(_ context.Context, r RenderRequest, _ ProgressFunc) error {
			got = append(got, name+":"+r.Model)
			return nil
		})
	}
	r := &Router{Default: named("procedural"), Models: map[string]Runner{"wan-2.2": named("external")}}
	r.Render(context.Background(), RenderRequest{Model: "wan-2.2"}, nil)
	r.Render(context.Background(), RenderRequest{Model: "veo-3"}, nil)
	if !reflect.DeepEqual(got, []string{"external:wan-2.2", "procedural:veo-3"}) {
		t.Errorf("routed %v", got)
	}
	if err := (&Router{}).Render(context.Background(), RenderRequest{Model: "x"}, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty router: %v", err)
	}
}

// TestExternalRunnerExampleScript runs the example runner of README.md.
func TestExternalRunnerExampleScript(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe", "sh", "sed", "tr")
	script, err := filepath.Abs("testdata/example-runner.sh")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "clip.mp4")
	var log progressLog
	req := RenderRequest{Model: "ltx-video", Prompt: "a test pattern", Resolution: "180p", AspectRatio: "21:9", DurationSeconds: 2, FPS: 10, OutputPath: out}
	if err := (&ExternalRunner{Command: []string{"sh", script}}).Render(testCtx(t), req, log.fn); err != nil {
		t.Fatal(err)
	}
	if got := log.values(); !reflect.DeepEqual(got, []int{0, 5, 99, 100}) {
		t.Errorf("progress %v", got)
	}
	if info := probe(t, out); info.Width != 420 || info.Height != 180 || !near(info.Duration, 2*time.Second, 500*time.Millisecond) {
		t.Errorf("clip %+v", info)
	}
}
