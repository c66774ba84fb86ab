package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EKilledAgentLeavesNoRunner: an agent is SIGKILLed while its external
// runner renders, and the runner has started a child of its own (as a
// script starting a model server does). The kernel ends the runner with the
// agent (its parent-death signal); the child, which that signal does not
// reach, is ended when the agent starts again on the same work dir, before
// the task directory it works in is removed. Neither keeps a GPU busy for a
// task the farm has already given to another node.
func TestE2EKilledAgentLeavesNoRunner(t *testing.T) {
	f := newE2EFarm(t, 100)
	runners, children, started := filepath.Join(f.dir, "runner-pids"), filepath.Join(f.dir, "child-pids"), filepath.Join(f.dir, "started")
	script := writeScript(t, f.dir, "spawning-runner.sh", `#!/bin/sh
cat >/dev/null
echo $$ >>`+runners+`
sleep 600 &
echo $! >>`+children+`
echo "progress 10"
touch `+started+`
while :; do sleep 0.2; done
`)
	t.Cleanup(func() { // whatever the test's outcome, nothing it started stays
		for _, pid := range append(pidsIn(t, runners), pidsIn(t, children)...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	a := f.startAgent("agent-a", "--runner", e2eModel+"="+script)
	f.createVideo(manualBody("a clock tower at noon", ""))
	eventually(t, 30*time.Second, "the runner started its child", func() bool { return exists(started) && len(pidsIn(t, children)) == 1 })
	runner, child := pidsIn(t, runners)[0], pidsIn(t, children)[0]
	if !alive(runner) || !alive(child) {
		t.Fatalf("runner %d or its child %d is not running before the kill", runner, child)
	}

	a.kill()
	eventually(t, 10*time.Second, "the runner ended with the agent", func() bool { return !alive(runner) })
	if !alive(child) {
		t.Fatalf("the runner's child %d ended with the agent: this test no longer shows the restart's part", child)
	}

	b := f.startAgent("agent-a", "--runner", e2eModel+"="+script)
	eventually(t, 10*time.Second, "the restarted agent ended the child left in its work dir", func() bool { return !alive(child) })
	if len(findLogs(b.proc, "ended a process an earlier run of the agent left in its task directory", "pid", strconv.Itoa(child))) != 1 {
		t.Errorf("the restarted agent did not log ending process %d", child)
	}
}

// pidsIn reads the process ids a runner script appended to path, one a line.
func pidsIn(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// alive reports whether process pid runs: it exists and is not a zombie
// (one that ended but whose new parent, in a container without an init
// that reaps, has not collected it).
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
