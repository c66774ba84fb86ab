package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2ETwoMachinesOneName: a second agent started with a live node's
// --name (another machine, another work dir) is refused and keeps
// retrying, and the first keeps its node: before, each registration
// replaced the other's node, whose next call got 401 and registered again,
// taking the node back, so both lost their leases in turn for as long as
// both ran. An agent restarting on its own work dir replaces its live node
// at once (TestE2EKilledAgentLeavesNoRunner restarts one).
func TestE2ETwoMachinesOneName(t *testing.T) {
	f := newE2EFarm(t, 100)
	a := f.startAgent("agent-a")
	twin, first := startProc(t, "agent twin", []string{"agent", "--server", f.agentURL, "--token", e2eAgentToken, "--name", "agent-a",
		"--virtual-gpus", "4", "--work-dir", filepath.Join(f.dir, "work-twin"), "--log-level", "info"},
		nil, "cannot register with the control plane; retrying")
	if msg := fmt.Sprint(first["err"]); !strings.Contains(msg, "node_name_in_use") && !strings.Contains(msg, "is registered as") {
		t.Fatalf("the twin's registration failed for another reason: %v", first)
	}
	// Long enough for the twin to retry and for agent A to heartbeat many
	// times: A must never be told that its node is gone.
	eventually(t, 20*time.Second, "the twin retried its registration", func() bool {
		return len(findLogs(twin, "cannot register with the control plane; retrying")) >= 3
	})
	if n := len(findLogs(twin, "registered")); n != 0 {
		t.Fatalf("the twin registered %d time(s) under a live node's name", n)
	}
	for _, m := range logs(a.proc) {
		if strings.Contains(fmt.Sprint(m["msg"]), "no longer knows this node") {
			t.Fatalf("agent A lost its node to the twin: %v", m)
		}
	}
	if n := len(findLogs(a.proc, "registered")); n != 1 {
		t.Fatalf("agent A registered %d times, want once", n)
	}
	if refused := findLogs(f.srv, "agent request", "status", "409"); len(refused) == 0 {
		t.Errorf("the control plane logged no refused registration")
	}
}
