package server_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// The FSM's own measurements reach /metrics: apply latency per command type
// and, once a snapshot is taken, its two phases, its size and the pages it
// wrote to the state file. Where promtool is installed the whole page must
// pass its lint.
func TestFSMMetrics(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 10_000)
	h.create(key, map[string]any{"mode": "manual", "prompt": "a fox", "model": "wan-2.2-a14b", "resolution": "480p"})
	if _, err := h.admin.Snapshot(context.Background()); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	page := h.adminGet("/metrics")
	for _, want := range []struct {
		series string
		min    float64
	}{
		{`vidfarm_fsm_apply_seconds_count{type="create_video"}`, 1},
		{`vidfarm_fsm_apply_seconds_count{type="create_account"}`, 1},
		{`vidfarm_fsm_snapshot_seconds_count{phase="copy"}`, 1},
		{`vidfarm_fsm_snapshot_seconds_count{phase="persist"}`, 1},
		{`vidfarm_fsm_snapshot_bytes`, 100},
		// The video, its task graph, its event, the hot stream, the index:
		// more than one page.
		{`vidfarm_state_file_pages_written_total`, 2},
		// raft-wal's own counters: the bootstrap configuration, the
		// account, the video and more, each appended and synced.
		{`vidfarm_raft_log_written_entries_total`, 3},
		{`vidfarm_raft_log_written_bytes_total`, 100},
		{`vidfarm_raft_log_appends_total`, 1},
		{`vidfarm_raft_log_segments_filled_total`, 0},
		// The memory the process owns, without the state file's mapped
		// pages: a test process's is megabytes.
		{`vidfarm_process_anon_resident_bytes`, 1 << 20},
	} {
		v, ok := metricSample(page, want.series)
		if !ok {
			t.Errorf("/metrics has no %s", want.series)
			continue
		}
		if v < want.min {
			t.Errorf("%s = %v, want at least %v", want.series, v, want.min)
		}
	}
	lintMetrics(t, page)
}

// lintMetrics runs promtool's lint over a /metrics page, where promtool is
// installed (make test installs it).
func lintMetrics(t *testing.T, page string) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Log("promtool not installed: lint skipped")
		return
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
