package pipeline

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/fakes"
)

// fakeComfy is the fake ComfyUI server of internal/fakes (test support,
// shared with cmd/vidfarm's end-to-end tests).
type fakeComfy = fakes.ComfyUI

// newFakeComfy starts a fake server that saves comfyTestClip; setup sets
// its behaviour first.
func newFakeComfy(t *testing.T, setup ...func(*fakeComfy)) *fakeComfy {
	t.Helper()
	return fakes.NewComfyUI(t, comfyTestClip(t), setup...)
}

// comfyRunner is a runner of f's server for wf that polls quickly and
// logs into f.Logs.
func comfyRunner(f *fakeComfy, wf *ComfyWorkflow) *ComfyUIRunner {
	return &ComfyUIRunner{URL: f.URL(), Workflow: wf, PollInterval: 5 * time.Millisecond, Tools: testTools(),
		Logger: slog.New(slog.NewTextHandler(&f.Logs, nil))}
}

// comfyClip is made once for all the tests.
var comfyClip struct {
	once sync.Once
	b    []byte
	err  error
}

// comfyTestClip is a small real MP4.
func comfyTestClip(t *testing.T) []byte {
	t.Helper()
	requireTools(t, "ffmpeg", "ffprobe")
	comfyClip.once.Do(func() {
		dir, err := os.MkdirTemp("", "comfyclip")
		if err != nil {
			comfyClip.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "clip.mp4")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, comfyClip.err = (OSExecutor{}).Run(ctx, Command{Name: "ffmpeg", Args: []string{"-v", "error", "-f", "lavfi", "-i",
			"testsrc=s=64x48:r=8:d=1", "-c:v", "mpeg4", "-pix_fmt", "yuv420p", out}}); comfyClip.err == nil {
			comfyClip.b, comfyClip.err = os.ReadFile(out)
		}
	})
	if comfyClip.err != nil {
		t.Fatal(comfyClip.err)
	}
	return comfyClip.b
}
