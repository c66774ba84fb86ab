package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/fakes"
)

// cogRequest is a 5 s 720p 16:9 image_to_video request writing into a
// fresh directory.
func cogRequest(t *testing.T) RenderRequest {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "in.png")
	if err := os.WriteFile(img, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o644); err != nil {
		t.Fatal(err)
	}
	return RenderRequest{Model: "wan-2.2-a14b", Operation: ImageToVideo, Prompt: "a lighthouse at dusk", Seed: 42,
		Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5, FPS: 24, InputImages: []string{img},
		OutputPath: filepath.Join(dir, "out", "clip.mp4")}
}

func cogRunner(f *fakes.Cog) *CogRunner {
	return &CogRunner{URL: f.Server.URL, ID: "wjx3whax6rf4vphkegkhcvpv6a", Inputs: map[string]string{
		FieldPrompt: "prompt", FieldSeed: "seed", FieldWidth: "width", FieldHeight: "height",
		FieldNumFrames: "num_frames", FieldImage: "image"}}
}

func TestCogRenderStreamsProgressAndDownloadsURL(t *testing.T) {
	f := fakes.NewCog(t)
	f.Logs = []string{"loading weights", " 10%|█         | 1/10 [00:01<00:09]", "\r 50%|█████     | 5/10\r 70%|███████   | 7/10", "denoise step 9/10"}
	req := cogRequest(t)
	var prog progressLog
	if err := cogRunner(f).Render(context.Background(), req, prog.fn); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(req.OutputPath)
	if err != nil || !bytes.Equal(got, f.Clip) {
		t.Fatalf("clip = %q, %v; want the server's file", got, err)
	}
	if want := []int{0, 10, 70, 90, 100}; !slices.Equal(prog.values(), want) {
		t.Errorf("progress = %v, want %v", prog.values(), want)
	}
	in := f.Received[0]
	want := map[string]any{"prompt": "a lighthouse at dusk", "seed": 42.0, "width": 1280.0, "height": 720.0, "num_frames": 120.0}
	for k, v := range want {
		if in[k] != v {
			t.Errorf("input %s = %v, want %v", k, in[k], v)
		}
	}
	if img, _ := in["image"].(string); !strings.HasPrefix(img, "data:image/png;base64,") {
		t.Errorf("input image = %.40q, want a PNG data URI", img)
	}
	if _, sent := in["negative_prompt"]; sent {
		t.Error("negative_prompt sent though not mapped")
	}
}

func TestCogOutputs(t *testing.T) {
	clip := []byte("\x00\x00\x00\x18ftypisom clip bytes")
	b64 := base64.StdEncoding.EncodeToString(clip)
	tests := []struct {
		name   string
		output func(base string) any
		msg    string // "" = success
	}{
		{"data URI", func(string) any { return "data:video/mp4;base64," + b64 }, ""},
		{"iterator list, last is the clip", func(base string) any { return []any{"data:image/png;base64,AAAA", base + "/files/clip.mp4"} }, ""},
		{"data URI of an image", func(string) any { return "data:image/png;base64," + b64 }, "not a video"},
		{"data URI not base64", func(string) any { return "data:video/mp4," + b64 }, "not base64"},
		{"broken base64", func(string) any { return "data:video/mp4;base64,@@@@" }, "does not decode"},
		{"a number", func(string) any { return 42 }, "not a file"},
		{"a sentence", func(string) any { return "done!" }, "neither a URL nor a data URI"},
		{"null", func(string) any { return nil }, "not a file"},
		{"URL that 404s", func(base string) any { return base + "/files/missing.mp4" }, "404"},
		{"empty data URI", func(string) any { return "data:video/mp4;base64," }, "no output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fakes.NewCog(t)
			f.Clip = clip
			f.Output = tc.output
			req := cogRequest(t)
			err := cogRunner(f).Render(context.Background(), req, nil)
			if tc.msg == "" {
				got, rerr := os.ReadFile(req.OutputPath)
				if err != nil || rerr != nil || !bytes.Equal(got, clip) {
					t.Fatalf("Render = %v; clip %q, %v", err, got, rerr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Render = %v, want an error saying %q", err, tc.msg)
			}
			if !errors.Is(err, ErrRunnerFailed) && !errors.Is(err, ErrNoOutput) {
				t.Errorf("error %v is neither ErrRunnerFailed nor ErrNoOutput", err)
			}
			if _, serr := os.Stat(req.OutputPath); serr == nil && !strings.Contains(tc.msg, "no output") {
				t.Error("a garbage output left a clip behind")
			}
		})
	}
}

func TestCogRetryJoinsThePrediction(t *testing.T) {
	f := fakes.NewCog(t)
	f.Logs = []string{"30%"}
	f.CutFirst = true
	req := cogRequest(t)
	if err := cogRunner(f).Render(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if created, _ := f.Counts(); created != 1 {
		t.Errorf("predictions created = %d, want 1: the repeated PUT must join the first", created)
	}
}

func TestCogLostAnswerJoinsThePrediction(t *testing.T) {
	f := fakes.NewCog(t)
	f.LoseFirst = true
	if err := cogRunner(f).Render(context.Background(), cogRequest(t), nil); err != nil {
		t.Fatal(err)
	}
	if created, _ := f.Counts(); created != 1 {
		t.Errorf("predictions created = %d, want 1: the repeated PUT must join the first", created)
	}
}

func TestCogSynchronousModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(f *fakes.Cog)
	}{
		{"model without @cog.streaming (406)", func(f *fakes.Cog) { f.NoStream = true }},
		{"Cog without event streams", func(f *fakes.Cog) { f.Legacy = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakes.NewCog(t)
			tc.set(f)
			req := cogRequest(t)
			var prog progressLog
			if err := cogRunner(f).Render(context.Background(), req, prog.fn); err != nil {
				t.Fatal(err)
			}
			if created, _ := f.Counts(); created != 1 {
				t.Errorf("predictions created = %d, want 1", created)
			}
			if want := []int{0, 100}; !slices.Equal(prog.values(), want) {
				t.Errorf("progress = %v, want %v", prog.values(), want)
			}
			if got, err := os.ReadFile(req.OutputPath); err != nil || !bytes.Equal(got, f.Clip) {
				t.Errorf("clip = %q, %v", got, err)
			}
		})
	}
}

func TestCogCancelReachesServer(t *testing.T) {
	f := fakes.NewCog(t)
	f.Gate = make(chan struct{})
	defer close(f.Gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r := cogRunner(f)
	go func() { done <- r.Render(ctx, cogRequest(t), nil) }()
	waitUntil(t, "the prediction starts", func() bool { n, _ := f.Counts(); return n == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Render = %v, want context.Canceled", err)
	}
	if _, cancelled := f.Counts(); !slices.Equal(cancelled, []string{r.ID}) {
		t.Errorf("cancel requests = %v, want [%s]", cancelled, r.ID)
	}
}

func TestCogBusyAndFailed(t *testing.T) {
	f := fakes.NewCog(t)
	f.FailWith = "CUDA out of memory. Tried to allocate 20.00 GiB"
	err := cogRunner(f).Render(context.Background(), cogRequest(t), nil)
	if !errors.Is(err, ErrRunnerFailed) || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Fatalf("failed prediction: Render = %v, want ErrRunnerFailed with the model's error", err)
	}

	f = fakes.NewCog(t)
	f.Gate = make(chan struct{})
	defer close(f.Gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cogRunner(f).Render(ctx, cogRequest(t), nil) }()
	waitUntil(t, "the first prediction starts", func() bool { n, _ := f.Counts(); return n == 1 })
	second := cogRunner(f)
	second.ID = "another-task-attempt"
	if err := second.Render(context.Background(), cogRequest(t), nil); !errors.Is(err, ErrCogBusy) {
		t.Fatalf("second prediction on a one-slot model: Render = %v, want ErrCogBusy", err)
	}
}

func TestCogHealth(t *testing.T) {
	tests := []struct {
		name   string
		health string
		inputs []string
		want   error
		msg    string
	}{
		{"ready", "READY", nil, nil, ""},
		{"busy is ready", "BUSY", nil, nil, ""},
		{"starting", "STARTING", nil, ErrCogNotReady, `"STARTING"`},
		{"setup failed", "SETUP_FAILED", nil, ErrCogNotReady, "CUDA out of memory"},
		{"defunct", "DEFUNCT", nil, ErrCogNotReady, "DEFUNCT"},
		{"input missing", "READY", []string{"prompt", "seed"}, ErrCogInputs, "has no input height, image, num_frames, width (its inputs: prompt, seed)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fakes.NewCog(t)
			f.Health = tc.health
			if tc.inputs != nil {
				f.InputNames = tc.inputs
			}
			err := cogRunner(f).Health(context.Background())
			if !errors.Is(err, tc.want) || (tc.want != nil && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("Health = %v, want %v saying %q", err, tc.want, tc.msg)
			}
		})
	}
	f := fakes.NewCog(t)
	f.Server.Close()
	if err := cogRunner(f).Health(context.Background()); !errors.Is(err, ErrCogNotReady) {
		t.Errorf("Health of a stopped container = %v, want ErrCogNotReady", err)
	}
}

func TestLogProgress(t *testing.T) {
	tests := []struct {
		logs string
		want int
		ok   bool
	}{
		{" 45%|████▌     | 45/100 [00:10<00:12, 4.5it/s]", 45, true},
		{"step 3/12", 25, true},
		{"a\rb 12.5% c\r 80%|", 80, true},
		{"Progress: 100%\n", 100, true},
		{"loading model\n", 0, false},
		{"12/0 steps", 0, false},
		{"150%", 0, false},
		{"done 20%\nsaving video", 20, true},
	}
	for _, tc := range tests {
		got, ok := LogProgress(tc.logs)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LogProgress(%q) = %d, %v; want %d, %v", tc.logs, got, ok, tc.want, tc.ok)
		}
	}
}

// waitUntil polls cond until it holds or 10 s pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCogServerDiesMidPrediction(t *testing.T) {
	f := fakes.NewCog(t)
	f.Gate = make(chan struct{})
	defer close(f.Gate)
	done := make(chan error, 1)
	go func() { done <- cogRunner(f).Render(context.Background(), cogRequest(t), nil) }()
	waitUntil(t, "the prediction starts", func() bool { n, _ := f.Counts(); return n == 1 })
	// The container goes away: nothing listens, the open stream breaks.
	f.Server.Listener.Close()
	f.Server.CloseClientConnections()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "prediction wjx3whax6rf4vphkegkhcvpv6a") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Render = %v, want the failed reconnection to the prediction", err)
	}
}

// TestCogRunFiles runs an avatar prediction: the narration and the picture
// go as data URIs under their mapped input names; an unmapped field is
// refused before anything is sent.
func TestCogRunFiles(t *testing.T) {
	f := fakes.NewCog(t)
	req := cogRequest(t)
	wav := filepath.Join(t.TempDir(), "narration.wav")
	if err := os.WriteFile(wav, []byte("RIFF\x24\x00\x00\x00WAVEfmt "), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &CogRunner{URL: f.Server.URL, Inputs: map[string]string{"audio": "driven_audio", "portrait": "source_image"}}
	out := filepath.Join(t.TempDir(), "presenter.mp4")
	if err := r.Run(context.Background(), map[string]string{"audio": wav, "portrait": req.InputImages[0]}, out, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, f.Clip) {
		t.Fatalf("clip = %q, %v; want the server's file", got, err)
	}
	in := f.Received[0]
	if a, _ := in["driven_audio"].(string); !strings.HasPrefix(a, "data:audio/wave;base64,") {
		t.Errorf("driven_audio = %.40q, want a WAV data URI", a)
	}
	if p, _ := in["source_image"].(string); !strings.HasPrefix(p, "data:image/png;base64,") || len(in) != 2 {
		t.Errorf("input = %v, want driven_audio and source_image only", in)
	}
	err := r.Run(context.Background(), map[string]string{"mask": wav}, out, nil)
	if !errors.Is(err, ErrInvalidRequest) || f.Created != 1 {
		t.Errorf("Run with an unmapped field = %v (%d predictions), want ErrInvalidRequest and none sent", err, f.Created)
	}
}
