package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// preStateFileRelease is the last commit whose server kept the whole state in
// memory and wrote whole snapshots.
const preStateFileRelease = "291ac63"

var releases sync.Map // commit -> *release

type release struct {
	once sync.Once
	bin  string
	err  error
}

// releaseBinary builds the server of an earlier commit from this repository's
// history (git archive, then go build), once per test binary.
func releaseBinary(t *testing.T, commit string) string {
	t.Helper()
	v, _ := releases.LoadOrStore(commit, &release{})
	r := v.(*release)
	r.once.Do(func() {
		root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			r.err = fmt.Errorf("find the repository (the test builds an earlier release from its history): %w", err)
			return
		}
		src := filepath.Join(filepath.Dir(vidfarmBinary(t)), "release-"+commit)
		if err := os.MkdirAll(src, 0o755); err != nil {
			r.err = err
			return
		}
		archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", strings.TrimSpace(string(root)), commit, src)
		if out, err := archive.CombinedOutput(); err != nil {
			r.err = fmt.Errorf("git archive %s: %v\n%s", commit, err, out)
			return
		}
		bin := filepath.Join(src, "vidfarm")
		build := exec.Command("go", "build", "-o", bin, "./cmd/vidfarm")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			r.err = fmt.Errorf("build release %s: %v\n%s", commit, err, out)
			return
		}
		r.bin = bin
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.bin
}

// TestUpgradeToStateFile runs the last release before the state file (built
// from its commit) on a data directory, then this binary on the same
// directory, and checks that it upgrades in place: the first start restores
// the old release's last snapshot into a new state file and replays the log
// after it, every account, key, video and idempotent replay answers as
// before, and the next start resumes from the file.
func TestUpgradeToStateFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	dataDir := t.TempDir()
	p, f, a := startRelease(t, preStateFileRelease, dataDir)
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
	list := withoutEstimates(t, p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=10", a.APIKey, "").body)
	p.terminate()
	if _, err := os.Stat(filepath.Join(dataDir, "state.db")); !os.IsNotExist(err) {
		t.Fatalf("the old release left a state file (%v): not the release before it", err)
	}

	p = startServer(t, dataDir)
	if strings.Contains(p.stderr.String(), "resuming from state file") {
		t.Fatal("a data directory without a state file claimed to resume from one")
	}
	sameObserved(t, observe(t, p, f), before)
	replays(t, p, f)
	if got := withoutEstimates(t, p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=10", a.APIKey, "").body); got != list {
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

// firstStateFileRelease is the last commit whose state file kept the queue
// (unfinished videos, task graphs, idempotency records) inside one hot
// stream rewritten whole at every checkpoint: format vidfarm-state-v1.
const firstStateFileRelease = "3856e2f"

// TestUpgradeStateFileV1 starts this binary on a data directory whose state
// file an earlier release wrote in format v1, with videos queued and
// finished on both sides of its last checkpoint: it resumes from the file,
// shows the same state and replays the same idempotent answers, and after
// its own checkpoint (format v2, the queue one record per key) it resumes
// again to the same state.
func TestUpgradeStateFileV1(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	dataDir := t.TempDir()
	p, f, a := startRelease(t, firstStateFileRelease, dataDir)
	failed := f.create(t, p, a.APIKey, "v1-done", `{"mode":"auto","prompt":"finished in v1","duration_seconds":5}`)
	if _, err := p.admin.FailVideo(ctx, failed, "operator"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.create(t, p, a.APIKey, fmt.Sprintf("v1-queued-%d", i), `{"mode":"manual","prompt":"queued in v1","model":"wan-2.2-a14b","duration_seconds":5}`)
	}
	if _, err := p.admin.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	f.create(t, p, a.APIKey, "v1-after", `{"mode":"auto","prompt":"after the v1 checkpoint","duration_seconds":5}`)
	before := observe(t, p, f)
	list := withoutEstimates(t, p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=10", a.APIKey, "").body)
	p.terminate()

	for round := range 2 {
		p = startServer(t, dataDir)
		if !strings.Contains(p.stderr.String(), "resuming from state file") {
			t.Fatalf("start %d after the upgrade did not resume from the state file:\n%s", round+1, p.stderr.String())
		}
		sameObserved(t, observe(t, p, f), before)
		replays(t, p, f)
		if got := withoutEstimates(t, p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=10", a.APIKey, "").body); got != list {
			t.Fatalf("listing after the upgrade (start %d):\n%s\nwant\n%s", round+1, got, list)
		}
		if _, err := p.admin.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		p.terminate()
	}
}

// startRelease starts the server of an earlier commit on dataDir, with one
// pro account the farm knows.
func startRelease(t *testing.T, commit, dataDir string) (*proc, *farm, admin.CreatedAccount) {
	t.Helper()
	p := startServerBin(t, releaseBinary(t, commit), dataDir)
	f := &farm{keys: map[string]string{}, accounts: map[string][2]string{}, videos: map[string]string{}}
	a, err := p.admin.CreateAccount(context.Background(), "pro", "pro", 200)
	if err != nil {
		t.Fatal(err)
	}
	f.accounts["pro"] = [2]string{a.AccountID, a.APIKey}
	f.keys["pro/first"] = a.APIKey
	return p, f, a
}
