package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2ECancelStopsTheRunner cancels a video while an agent's runner is
// rendering it: the answer is canceled with a full refund (no task had
// finished), the agent learns at its next report that the lease is gone and
// kills the runner, and nothing is charged again afterwards.
func TestE2ECancelStopsTheRunner(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	started, pidFile := filepath.Join(f.dir, "started"), filepath.Join(f.dir, "runner.pid")
	runner := writeScript(t, f.dir, "endless-runner.sh", `#!/bin/sh
cat >/dev/null
echo $$ > `+pidFile+`
echo "progress 30"
touch `+started+`
while true; do sleep 0.1; done
`)
	a := f.startAgent("agent-a", "--runner", e2eModel+"="+runner)
	id := f.createVideo(manualBody("a render nobody waits for", ""))["id"].(string)
	v := f.waitVideo(id, 30*time.Second, "processing with progress", func(v map[string]any) bool {
		return v["status"] == "processing" && percentOf(v) > 0
	})
	if p, _ := v["progress"].(map[string]any); p["stage"] != "rendering" {
		t.Fatalf("a manual video rendering reports progress %v, want stage rendering", p)
	}
	eventually(t, 10*time.Second, "the runner started", func() bool { return exists(started) })
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("runner pid %q: %v", b, err)
	}
	if got := f.balance(); got != grant-manualPrice {
		t.Fatalf("balance while rendering %d, want %d", got, grant-manualPrice)
	}

	v = f.srv.must(http.StatusOK, http.MethodPost, "/v1/videos/"+id+"/cancel", f.apiKey, "").obj(t)
	c, _ := v["cancellation"].(map[string]any)
	if v["status"] != "canceled" || c == nil || num(c, "credits_refunded") != manualPrice {
		t.Fatalf("cancel answered %v", v)
	}
	if got := f.balance(); got != grant {
		t.Fatalf("balance after the cancel %d, want %d (nothing had finished)", got, grant)
	}
	eventually(t, 30*time.Second, "the agent dropped the task and its runner is gone", func() bool {
		gone := errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		return gone && len(findLogs(a.proc, "task dropped: its lease is stale; result discarded", "task_id", id+"/render")) == 1
	})
	if got := f.video(id)["status"]; got != "canceled" || f.balance() != grant {
		t.Fatalf("after the runner stopped: status %v, balance %d", got, f.balance())
	}
}
