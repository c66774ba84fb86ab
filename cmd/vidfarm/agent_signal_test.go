package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EAgentSecondSignalStopsDrain: SIGTERM makes a `vidfarm agent` in
// the middle of a render drain (--drain-timeout 10m); a second signal, a
// Ctrl-C, stops it at once: it says so, hands the render back by
// deregistering and exits 0, and the video is rendered by another agent
// without a failure or a second charge.
func TestE2EAgentSecondSignalStopsDrain(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	runner := writeScript(t, f.dir, "gated-runner.sh", perPromptGatedRunner(f.dir))
	a := f.startAgent("agent-a", "--runner", e2eModel+"="+runner, "--drain-timeout", "10m")
	id := f.createVideo(manualBody("alpha lighthouse in a storm", ""))["id"].(string)
	eventually(t, 30*time.Second, "agent A's runner started the render", func() bool {
		return exists(filepath.Join(f.dir, "started-alpha"))
	})

	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "agent A draining its render", func() bool {
		return len(findLogs(a.proc, "draining: leasing no new work", "running_tasks", "1")) == 1
	})
	if err := a.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.exited:
		if err != nil {
			t.Fatalf("agent A exited with %v after the second signal", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent A still running 30 s after the second signal (its drain timeout is 10 minutes)")
	}
	for _, msg := range []string{
		"second signal: stopping without waiting for the running tasks; deregistering hands them to other nodes",
		"deregistered; agent stopped",
	} {
		if len(findLogs(a.proc, msg)) != 1 {
			t.Errorf("agent A did not log %q once", msg)
		}
	}
	if m := findLogs(a.proc, "second signal: stopping without waiting for the running tasks; deregistering hands them to other nodes"); len(m) == 1 &&
		m[0]["level"] != "WARN" {
		t.Errorf("second signal logged at %v, want WARN", m[0]["level"])
	}
	if len(findLogs(f.srv, "node deregistered", "node_id", a.nodeID)) != 1 {
		t.Error("the server did not log agent A's deregistration")
	}

	b := f.startAgent("agent-b") // procedural: the render needs no gate
	v := f.waitStatus(id, "completed", 90*time.Second)
	if len(findLogs(f.srv, "task completed", "task_id", id+"/render", "node_id", b.nodeID)) != 1 {
		t.Errorf("agent B did not complete the render handed back")
	}
	if charged := int64(num(v, "credits_charged")); charged != manualPrice {
		t.Errorf("charged %d, want %d", charged, manualPrice)
	}
	for _, m := range logs(f.srv) {
		if m["msg"] == "lease expired" || m["msg"] == "task failed" {
			t.Errorf("stopping at once counted as a failure: %v", m)
		}
	}
	if got := f.balance(); got != grant-manualPrice {
		t.Errorf("balance %d, want %d", got, grant-manualPrice)
	}
}

// TestAgentFlagErrors: `vidfarm agent` with a bad flag value names the
// flag the user typed, not a field of agent.Config.
func TestAgentFlagErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "-1"}, "--workers -1: want 0 (default) or more"},
		{[]string{"--virtual-gpus", "65"}, "--virtual-gpus 65: want 0 to 64"},
		{[]string{"--work-dir-max-bytes", "-5"}, "--work-dir-max-bytes -5: want 0 (no bound) or more"},
		{[]string{"--drain-timeout", "-1s"}, "--drain-timeout -1s: want 0 or more"},
		{[]string{"--server", "cp:7443"}, `--server "cp:7443": want an http or https URL`},
		{[]string{"--runner", "gpt-video=/bin/true"}, `--runner: model "gpt-video" is not a catalog model`},
		{[]string{"--token", ""}, "--token (the agent registration token) is required"},
	}
	for _, tc := range tests {
		args := append([]string{"agent", "--server", "http://127.0.0.1:1", "--token", "t",
			"--work-dir", filepath.Join(t.TempDir(), "work")}, tc.args...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a value taken for good would run the agent
		cmd := exec.CommandContext(ctx, vidfarmBinary(t), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no VIDFARM_ variables
		out, err := cmd.CombinedOutput()
		cancel()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("vidfarm %v: %v, want exit status 1:\n%s", tc.args, err, out)
			continue
		}
		if !strings.Contains(string(out), "vidfarm agent: invalid agent configuration: "+tc.want) {
			t.Errorf("vidfarm %v said:\n%s\nwant %q", tc.args, out, tc.want)
		}
	}
}
