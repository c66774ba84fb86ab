package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpgradeToStateFile starts the binary on a data directory as a release
// before the state file left it (Raft log and snapshots, no state.db) and
// checks that it upgrades in place: the first start restores the last
// snapshot into a new state file and replays the log after it, every
// account, key, video and idempotent replay answers as before, and the next
// start resumes from the file.
func TestUpgradeToStateFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	dataDir := t.TempDir()
	p := startServer(t, dataDir)
	f := &farm{keys: map[string]string{}, accounts: map[string][2]string{}, videos: map[string]string{}}
	a, err := p.admin.CreateAccount(ctx, "pro", "pro", 200)
	if err != nil {
		t.Fatal(err)
	}
	f.accounts["pro"] = [2]string{a.AccountID, a.APIKey}
	f.keys["pro/first"] = a.APIKey
	done := f.create(t, p, a.APIKey, "before-1", `{"mode":"auto","prompt":"finished before","duration_seconds":5}`)
	if _, err := p.admin.FailVideo(ctx, done, "operator"); err != nil {
		t.Fatal(err)
	}
	f.create(t, p, a.APIKey, "before-2", `{"mode":"auto","prompt":"queued before","duration_seconds":5}`)
	if _, err := p.admin.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	late := f.create(t, p, a.APIKey, "after-1", `{"mode":"auto","prompt":"after the snapshot","duration_seconds":5}`)
	if _, err := p.admin.FailVideo(ctx, late, "operator"); err != nil {
		t.Fatal(err)
	}
	before := observe(t, p, f)
	list := p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=10", a.APIKey, "").body
	p.terminate()

	// What the previous release left: no state file.
	if err := os.Remove(filepath.Join(dataDir, "state.db")); err != nil {
		t.Fatal(err)
	}
	p = startServer(t, dataDir)
	if strings.Contains(p.stderr.String(), "resuming from state file") {
		t.Fatal("a data directory without a state file claimed to resume from one")
	}
	sameObserved(t, observe(t, p, f), before)
	replays(t, p, f)
	if got := p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=10", a.APIKey, "").body; string(got) != string(list) {
		t.Fatalf("listing after the upgrade:\n%s\nwant\n%s", got, list)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "state.db")); err != nil {
		t.Fatalf("no state file after the upgrade: %v", err)
	}
	if _, err := p.admin.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	p.terminate()

	p = startServer(t, dataDir)
	if !strings.Contains(p.stderr.String(), "resuming from state file") {
		t.Fatalf("second start after the upgrade did not resume from the state file:\n%s", p.stderr.String())
	}
	sameObserved(t, observe(t, p, f), before)
	if m := stateMetric(t, p, `vidfarm_state_videos{tier="disk"}`); m != 2 {
		t.Fatalf("videos on disk: %v, want the two failed ones", m)
	}
	p.kill()
}
