package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// perPromptGatedRunner is an external runner (vidfarm.render.v1) like
// gatedRunnerScript, with a gate of its own per video: the first word of the
// prompt names the files dir/started-<word> (touched when it starts) and
// dir/gate-<word> (it renders once that exists). It exits when the agent
// that started it is gone.
func perPromptGatedRunner(dir string) string {
	return fmt.Sprintf(`#!/bin/sh
set -eu
req=$(cat)
out=$(printf '%%s' "$req" | sed -n 's/.*"output_path":"\([^"]*\)".*/\1/p')
word=$(printf '%%s' "$req" | sed -n 's/.*"prompt":"\([a-z]*\).*/\1/p')
agent=$PPID
echo "progress 10"
touch %[1]q/started-"$word"
while [ ! -e %[1]q/gate-"$word" ]; do
  kill -0 "$agent" 2>/dev/null || exit 3
  sleep 0.1
done
ffmpeg -v error -nostdin -y -f lavfi -i "testsrc2=s=854x480:r=24:d=5" -c:v libx264 -preset ultrafast -pix_fmt yuv420p "$out" >&2
echo "progress 100"
`, dir)
}

// adminCLI runs `vidfarm admin …` against the farm's server and returns
// what it printed.
func (f *e2eFarm) adminCLI(args ...string) string {
	f.t.Helper()
	full := append([]string{"admin", "--server", f.srv.admin.Server, "--admin-token", e2eAdminToken}, args...)
	out, err := exec.Command(vidfarmBinary(f.t), full...).Output()
	if err != nil {
		f.t.Fatalf("vidfarm %v: %v\n%s", full, err, out)
	}
	return string(out)
}

// adminCLIJSON runs an admin command with --json and decodes what it printed.
func (f *e2eFarm) adminCLIJSON(args ...string) map[string]any {
	f.t.Helper()
	out := f.adminCLI(append(args, "--json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		f.t.Fatalf("vidfarm admin %v printed no JSON object (%v): %s", args, err, out)
	}
	return m
}

// TestE2EDrainUnderLoad drains, with the admin CLI, agent A while it renders
// two videos (its two CPU slots full) and two more wait: the render whose
// runner finishes before the deadline is A's; the one still running at the
// (moved) deadline is handed back, without a failure, and agent B renders
// it; the waiting videos, one created during the drain, never go to A,
// although it has room once the first render is done. Every video
// completes, each charged once, and the account's balance is exact. Agent
// A logs each state change.
func TestE2EDrainUnderLoad(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	runner := writeScript(t, f.dir, "gated-runner.sh", perPromptGatedRunner(f.dir))
	a := f.startAgent("agent-a", "--runner", e2eModel+"="+runner)
	ids := map[string]string{}
	for _, w := range []string{"alpha", "bravo", "charlie"} {
		ids[w] = f.createVideo(manualBody(w+" lighthouse in a storm", ""))["id"].(string)
	}
	eventually(t, 30*time.Second, "agent A's runners started two renders", func() bool {
		for _, w := range []string{"alpha", "bravo"} {
			if !exists(filepath.Join(f.dir, "started-"+w)) {
				return false
			}
		}
		return true
	})

	n := f.adminCLIJSON("node", "drain", "agent-a", "--timeout", "10m", "--reason", "kernel update")
	if n["state"] != "draining" || n["id"] != a.nodeID || len(n["running_tasks"].([]any)) != 2 || n["drain_deadline"] == nil {
		t.Fatalf("drain answered %v", n)
	}
	eventually(t, 15*time.Second, "agent A logged that it is draining", func() bool {
		return len(findLogs(a.proc, "node maintenance state changed: draining, no new work; tasks still running at the deadline go back to the queue",
			"state", "draining", "reason", "kernel update")) == 1
	})
	ids["delta"] = f.createVideo(manualBody("delta lighthouse in a storm", ""))["id"].(string)

	// alpha finishes while A drains: its render is A's.
	touch(t, filepath.Join(f.dir, "gate-alpha"))
	alphaRender := ids["alpha"] + "/render"
	eventually(t, 60*time.Second, "the alpha render completed on agent A", func() bool {
		return len(findLogs(f.srv, "task completed", "task_id", alphaRender, "node_id", a.nodeID)) == 1
	})

	// What waits, and why: charlie and delta, although A has room now.
	var queue map[string]any
	eventually(t, 15*time.Second, "the queue lists charlie and delta", func() bool {
		queue = f.adminCLIJSON("queue")
		waiting := map[string]bool{}
		for _, w := range queue["waiting"].([]any) {
			if m := w.(map[string]any); m["reason"] != "" && m["task"] == "render" {
				waiting[m["video_id"].(string)] = true
			}
		}
		return waiting[ids["charlie"]] && waiting[ids["delta"]] && !waiting[ids["bravo"]]
	})
	if table := f.adminCLI("queue"); !strings.Contains(table, "REASON") || !strings.Contains(table, ids["charlie"]) {
		t.Fatalf("queue table:\n%s", table)
	} else {
		t.Logf("vidfarm admin queue:\n%s", table)
	}
	graph := f.adminCLIJSON("video", "inspect", ids["bravo"])
	if tasks := graph["tasks"].([]any); len(tasks) != 2 || tasks[0].(map[string]any)["node"] != a.nodeID ||
		tasks[0].(map[string]any)["state"] != "leased" {
		t.Fatalf("video inspect: %v", graph)
	}
	t.Logf("vidfarm admin video inspect:\n%s", f.adminCLI("video", "inspect", ids["bravo"]))

	// No time left: bravo's render goes back to the queue.
	f.adminCLIJSON("node", "drain", "agent-a", "--timeout", "0s")
	bravoRender := ids["bravo"] + "/render"
	eventually(t, 15*time.Second, "bravo's render handed back", func() bool {
		return len(findLogs(f.srv, "drain deadline passed: task handed back to the queue", "task_id", bravoRender, "node_id", a.nodeID)) == 1
	})
	eventually(t, 15*time.Second, "agent A dropped bravo's render", func() bool {
		return len(findLogs(a.proc, "task dropped: its lease is stale; result discarded", "task_id", bravoRender)) == 1
	})
	eventually(t, 15*time.Second, "agent A shown drained", func() bool {
		return strings.Contains(f.adminCLI("node", "list"), "drained")
	})
	table := f.adminCLI("node", "list")
	t.Logf("vidfarm admin node list:\n%s", table)
	if !strings.Contains(table, "NODE") || !strings.Contains(table, a.nodeID) || !strings.Contains(table, "agent-a") ||
		!strings.Contains(table, "kernel update") {
		t.Fatalf("node list table:\n%s", table)
	}

	b := f.startAgent("agent-b")
	for _, w := range []string{"alpha", "bravo", "charlie", "delta"} {
		v := f.waitStatus(ids[w], "completed", 90*time.Second)
		if charged := int64(num(v, "credits_charged")); charged != manualPrice {
			t.Errorf("%s charged %d, want %d", w, charged, manualPrice)
		}
	}
	for _, w := range []string{"bravo", "charlie", "delta"} {
		task := ids[w] + "/render"
		if len(findLogs(f.srv, "task completed", "task_id", task, "node_id", b.nodeID)) != 1 {
			t.Errorf("agent B (%s) did not complete %s exactly once", b.nodeID, task)
		}
	}
	for _, w := range []string{"charlie", "delta"} {
		if len(findLogs(f.srv, "task leased", "video_id", ids[w], "node_id", a.nodeID)) != 0 {
			t.Errorf("%s, waiting during the drain, was leased to agent A", w)
		}
	}
	for _, m := range logs(f.srv) {
		if m["msg"] == "lease expired" || m["msg"] == "task failed" {
			t.Errorf("a drain counted as a failure: %v", m)
		}
	}
	if got := f.balance(); got != grant-4*manualPrice {
		t.Fatalf("balance %d, want %d: four videos charged once each, nothing refunded", got, grant-4*manualPrice)
	}
	// A finished video's graph is gone; its tasks' times are what is left:
	// bravo's render (handed back, then done by B) and its finalize.
	graph = f.adminCLIJSON("video", "inspect", ids["bravo"])
	timings, _ := graph["timings"].([]any)
	if len(timings) != 2 || timings[0].(map[string]any)["kind"] != "render" || timings[0].(map[string]any)["gpu"] != "virtual" ||
		timings[1].(map[string]any)["kind"] != "finalize" || num(timings[0].(map[string]any), "seconds") <= 0 {
		t.Fatalf("inspect of the finished video: %v", graph)
	}
	if table := f.adminCLI("video", "inspect", ids["bravo"]); !strings.Contains(table, "finished tasks") || !strings.Contains(table, "virtual") {
		t.Fatalf("inspect table of the finished video:\n%s", table)
	}

	if n := f.adminCLIJSON("node", "uncordon", a.nodeID); n["state"] != "active" {
		t.Fatalf("uncordon answered %v", n)
	}
	eventually(t, 15*time.Second, "agent A logged that it takes work again", func() bool {
		return len(findLogs(a.proc, "node maintenance state changed: taking new work", "state", "active", "previous", "draining")) == 1
	})
}
