package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// requireTools skips the test when a tool is missing, unless
// VIDFARM_REQUIRE_TOOLS is set (as in CI), in which case it fails.
func requireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
				t.Fatalf("%s is not installed and VIDFARM_REQUIRE_TOOLS is set", n)
			}
			t.Skipf("%s is not installed (set VIDFARM_REQUIRE_TOOLS to make this a failure)", n)
		}
	}
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cpuMachine is what discovery reports on a machine without NVIDIA GPUs
// but with every tool.
func cpuMachine() (Capacity, error) {
	return Capacity{
		Hostname: "test-node",
		CPUCores: 2,
		GPUs:     []GPU{},
		Tools: []Tool{
			{Name: "ffmpeg", Found: true, Path: "/usr/bin/ffmpeg"},
			{Name: "ffprobe", Found: true, Path: "/usr/bin/ffprobe"},
			{Name: "espeak-ng", Found: true, Path: "/usr/bin/espeak-ng"},
		},
		Note: noteNoLibrary,
	}, nil
}

// running is an agent started by startAgent.
type running struct {
	cfg    Config
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// testConfig is a Config for f with fast timings, a fresh work dir, a
// CPU machine with 2 procedural GPUs and 2 CPU slots.
func testConfig(t testing.TB, f *fakeCP) Config {
	return Config{
		Server:            f.URL(),
		Token:             f.token,
		Name:              "test-node",
		WorkDir:           filepath.Join(t.TempDir(), "work"),
		CPUSlots:          2,
		Procedural:        true,
		VirtualGPUs:       2,
		HeartbeatInterval: 25 * time.Millisecond,
		RetryBackoff:      5 * time.Millisecond,
		DrainTimeout:      30 * time.Second,
		Tools:             &pipeline.Tools{Preset: "ultrafast"},
		Discover:          cpuMachine,
	}
}

// startAgent runs the agent until the test ends (or stop is called).
func startAgent(t testing.TB, cfg Config) *running {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cfg: cfg, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Errorf("agent did not stop within a minute")
		}
		if t.Failed() {
			t.Logf("agent logs:\n%s", logs.String())
		}
	})
	return r
}

// stop cancels the agent's context and returns Run's error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(time.Minute):
		t.Fatal("agent did not stop within a minute")
		return nil
	}
}

// waitFor polls cond until it holds, failing the test after 60 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// waitComplete waits until task id is completed or failed and returns the
// completion; a failure fails the test.
func waitComplete(t testing.TB, f *fakeCP, id string) wire.CompleteRequest {
	t.Helper()
	var c wire.CompleteRequest
	waitFor(t, "task "+id+" to end", func() bool {
		if fr, ok := f.failed(id); ok {
			t.Fatalf("task %s failed: %s", id, fr.Reason)
		}
		var ok bool
		c, ok = f.complete(id)
		return ok
	})
	return c
}

// expectFailed waits until task id is reported failed and checks that the
// reason names want.
func expectFailed(t *testing.T, f *fakeCP, id, want string) {
	t.Helper()
	waitFor(t, "the fail of "+id, func() bool { _, ok := f.failed(id); return ok })
	if fr, _ := f.failed(id); !strings.Contains(fr.Reason, want) {
		t.Errorf("%s: reason %q, want it to contain %q", id, fr.Reason, want)
	}
}

// emptyDir reports whether dir holds nothing.
func emptyDir(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != credentialFile && e.Name() != lockFile { // the agent's own, not a task's
			return false
		}
	}
	return true
}

// assignment is a task of video vid.
func assignment(vid, name string, kind scheduler.Kind, v wire.Video) wire.Assignment {
	v.ID = vid
	return wire.Assignment{TaskID: vid + "/" + name, Name: name, Kind: kind, Video: v}
}

// gateRunner is an external runner command that reports 10 %, waits until
// the file gate exists, then writes a clip that matches the request (the
// agent checks every runner's clip).
func gateRunner(t testing.TB, gate string) []string {
	requireTools(t, "ffmpeg", "ffprobe")
	const script = `req=$(cat)
echo "progress 10"
while [ ! -e "$1" ]; do sleep 0.02; done
` + writeClip + `
echo "progress 100"`
	return []string{"sh", "-c", script, "sh", gate}
}

// writeClip is shell that writes, with ffmpeg, a clip of the size and
// length asked by the request in $req to its output_path (as
// pipeline/testdata/example-runner.sh does); a flat colour encodes fastest.
const writeClip = `field() { printf '%s' "$req" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | tr -d '"'; }
ffmpeg -v error -nostdin -y -f lavfi -i "color=c=navy:s=$(field width)x$(field height):r=$(field fps):d=$(field duration_seconds)" \
  -c:v libx264 -preset ultrafast -pix_fmt yuv420p "$(field output_path)" >&2`
