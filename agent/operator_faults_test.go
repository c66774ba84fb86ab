// What an operator meets when a node's surroundings go wrong: two agents on
// one work dir, a control plane away mid-upload, a --server that is another
// listener, a runner for a model the node cannot run, a runner's timeout,
// a runner that leaves a child behind.

package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestWorkDirOneAgent: a second agent on a work dir that a live agent
// holds is refused, naming the holder's pid, and kills nothing of the
// first one's (its running task completes); once the first stops, the
// work dir is free again.
func TestWorkDirOneAgent(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	gate := filepath.Join(t.TempDir(), "gate")
	cfg.Runners = map[string][]string{"wan-2.2-a14b": gateRunner(t, gate)}
	first := startAgent(t, cfg)
	a := assignment("vid_lock", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "wan-2.2-a14b",
		Prompt: "a boat", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 5})
	f.enqueue(a)
	waitFor(t, "the first agent's runner to report progress", func() bool { return len(f.snapshot().progress) > 0 })

	second := cfg
	second.Name = "second-node"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err := Run(ctx, second)
	cancel()
	if !errors.Is(err, ErrWorkDirInUse) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(err.Error(), "its own --work-dir") {
		t.Fatalf("second agent: Run = %v, want ErrWorkDirInUse naming pid %d and --work-dir", err, os.Getpid())
	}
	for _, reg := range f.snapshot().registrations {
		if reg.Name == "second-node" {
			t.Error("the refused agent registered")
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitComplete(t, f, a.TaskID) // its runner was not killed as a leftover
	if strings.Contains(first.logs.String(), "ended a process") {
		t.Errorf("a process of the live agent was ended:\n%s", first.logs.String())
	}

	if err := first.stop(t); err != nil {
		t.Fatal(err)
	}
	release, err := lockWorkDir(cfg.WorkDir)
	if err != nil {
		t.Fatalf("work dir still locked after its agent stopped: %v", err)
	}
	release()
}

// TestWorkDirLockDiesWithItsHolder: the lock is another process's while
// it lives (refused with its pid), and free at once when it is SIGKILLed,
// so a killed agent's restart is not refused.
func TestWorkDirLockDiesWithItsHolder(t *testing.T) {
	if dir := os.Getenv("AGENT_TEST_HOLD_LOCK"); dir != "" {
		// The helper process: hold the lock until killed.
		if _, err := lockWorkDir(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		select {}
	}
	t.Parallel()
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestWorkDirLockDiesWithItsHolder$")
	helper.Env = append(os.Environ(), "AGENT_TEST_HOLD_LOCK="+dir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	_, err = lockWorkDir(dir)
	if !errors.Is(err, ErrWorkDirInUse) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(helper.Process.Pid)) {
		t.Fatalf("lock held by the helper: %v, want ErrWorkDirInUse naming pid %d", err, helper.Process.Pid)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	release, err := lockWorkDir(dir)
	if err != nil {
		t.Fatalf("lock of a SIGKILLed holder: %v", err)
	}
	release()
}

// isBlobPut reports whether r uploads an artifact.
func isBlobPut(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/agent/v1/blobs/")
}

// TestUploadOutlastsAControlPlaneOutage: the control plane goes down (503s
// and dropped connections for everything) when a finished task uploads,
// for longer than a few tries, and comes back within the lease; the
// upload and then the complete report keep trying and the task completes.
func TestUploadOutlastsAControlPlaneOutage(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	var puts, completes atomic.Int64
	const putsRefused, completesRefused = 8, 12 // more than blobAttempts and reportAttempts
	f.Outage = func(r *http.Request) bool {
		switch {
		case isBlobPut(r):
			return puts.Add(1) <= putsRefused
		case strings.HasSuffix(r.URL.Path, "/complete"):
			return completes.Add(1) <= completesRefused
		}
		n := puts.Load() // the whole control plane is down meanwhile
		return n > 0 && n <= putsRefused
	}
	cfg := testConfig(t, f)
	cfg.RetryBackoff = time.Millisecond
	r := startAgent(t, cfg)
	a := assignment("vid_outage", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "Tides rise and fall.", DurationSeconds: 5})
	f.enqueue(a)
	c := waitComplete(t, f, a.TaskID)
	if key := c.Artifacts[PlanFile]; len(f.blob(key)) == 0 {
		t.Errorf("artifacts %v: plan.json not stored", c.Artifacts)
	}
	if n := puts.Load(); n != putsRefused+1 {
		t.Errorf("%d uploads, want %d refused and one taken", n, putsRefused)
	}
	if !strings.Contains(r.logs.String(), "blob transfer failed; retrying") {
		t.Error("the refused uploads are not logged")
	}
}

// TestUploadGivesUpWithTheLease: a control plane that stays down past the
// lease (heartbeats refused too, so nothing renews it) is tried for as
// long as the lease may be valid, more than blobAttempts times, and then
// the upload gives up.
func TestUploadGivesUpWithTheLease(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	f.LeaseSeconds = 1
	var puts atomic.Int64
	var downSince atomic.Int64 // unix nanoseconds of the first refused upload
	f.Outage = func(r *http.Request) bool {
		if isBlobPut(r) {
			puts.Add(1)
			downSince.CompareAndSwap(0, time.Now().UnixNano())
		}
		return downSince.Load() != 0
	}
	cfg := testConfig(t, f)
	cfg.RetryBackoff = time.Millisecond
	r := startAgent(t, cfg)
	f.enqueue(assignment("vid_down", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "Tides rise and fall.", DurationSeconds: 5}))
	waitFor(t, "the upload to give up", func() bool {
		return strings.Contains(r.logs.String(), "blob transfer failed; giving up")
	})
	tried := time.Since(time.Unix(0, downSince.Load()))
	if n := puts.Load(); n <= blobAttempts {
		t.Errorf("%d upload tries, want more than %d while the lease may be valid", n, blobAttempts)
	}
	if tried < 700*time.Millisecond {
		t.Errorf("gave up %v after the outage began, want about the lease's 1 s", tried)
	}
}

// TestRegisterAtTheWrongListener: the public API's or the admin
// listener's address (a vidfarm listener answering 404 in the error
// envelope) stops the agent at once, saying which listener to use; a 404
// from something else (a proxy without its route yet) is retried, with
// the same hint logged as an error.
func TestRegisterAtTheWrongListener(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiErr(w, http.StatusNotFound, "not_found", "no endpoint "+r.Method+" "+r.URL.Path+"; see GET /v1 for the API")
	}))
	t.Cleanup(api.Close)
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		http.Error(w, "404 page not found", http.StatusNotFound)
	}))
	t.Cleanup(proxy.Close)

	cfg := testConfig(t, newFakeCP(t))
	cfg.Server = api.URL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := Run(ctx, cfg)
	if !errors.Is(err, ErrNotAgentListener) ||
		!strings.Contains(err.Error(), api.URL+" is not the control plane's agent listener (its --agent-listen, default :8082)") {
		t.Errorf("Run against the API listener = %v", err)
	}

	cfg = testConfig(t, newFakeCP(t))
	cfg.Server = proxy.URL
	r := startAgent(t, cfg)
	waitFor(t, "retries at the proxy", func() bool { return proxied.Load() >= 3 })
	if logs := r.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "is not the control plane's agent listener") {
		t.Errorf("no error with the hint in the logs:\n%s", logs)
	}
	if err := r.stop(t); err != nil {
		t.Errorf("Run behind the proxy = %v, want nil after a stop", err)
	}
}

// TestRunnerForAModelTheNodeCannotRun: a --runner for a model that needs
// more GPUs than the node has is warned about, as a runners file's
// gpu_memory_gb beyond every GPU is.
func TestRunnerForAModelTheNodeCannotRun(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.VirtualGPUs = 1
	cfg.Runners = map[string][]string{"veo-3": {"/bin/true"}, "wan-2.2-a14b": {"/bin/true"}} // 4 GPUs of 70 GB; one GPU
	r := startAgent(t, cfg)
	waitFor(t, "registration", func() bool { return len(f.snapshot().registrations) == 1 })
	logs := r.logs.String()
	if !strings.Contains(logs, `msg="runner's model needs more GPUs than this node has: the control plane never places it here" runner=veo-3 from=--runner model=veo-3 needs_gpus=4 needs_gpu_memory_gb=70 node_gpus=1`) {
		t.Errorf("no warning about veo-3:\n%s", logs)
	}
	if strings.Contains(logs, "model=wan-2.2-a14b needs_gpus") {
		t.Errorf("a model the node can run was warned about:\n%s", logs)
	}
}

// TestRunnerTimeoutSaysWhy: a runner that runs past its own timeout (the
// runners file's) fails the task saying so, with the end of its stderr.
func TestRunnerTimeoutSaysWhy(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.RunnerSpecs = []RunnerSpec{{Name: "slow", Kind: RunnerCommand, Models: []string{"wan-2.2-a14b"}, Timeout: 300 * time.Millisecond,
		Command: []string{"sh", "-c", "cat >/dev/null; echo 'loading weights' >&2; echo 'sampling step 3/50' >&2; exec sleep 60"},
		Where:   "runners.yaml:2"}}
	startAgent(t, cfg)
	a := assignment("vid_slow", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "wan-2.2-a14b",
		Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 4})
	f.enqueue(a)
	expectFailed(t, f, a.TaskID, "runner slow: the task ran past its timeout of 300ms; its stderr ended: loading weights sampling step 3/50")
}

// TestRunnerLeavingAChild: a runner that leaves a child holding its
// stdout (a server it started lazily) completes when it exits, and the
// child is ended with it.
func TestRunnerLeavingAChild(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	requireTools(t, "ffmpeg", "ffprobe")
	const script = `req=$(cat)
sleep 45 &
` + writeClip + `
echo "progress 100"`
	cfg.Runners = map[string][]string{"wan-2.2-a14b": {"sh", "-c", script}}
	startAgent(t, cfg)
	a := assignment("vid_child", "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "wan-2.2-a14b",
		Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 4})
	start := time.Now()
	f.enqueue(a)
	waitComplete(t, f, a.TaskID)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the task took %v: it waited for the runner's child", took)
	}
}
