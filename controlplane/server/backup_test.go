package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// TestBackupAndRestoreIntoANewCluster backs a node up, restores the backup into
// a fresh node, and checks the new node holds the same accounts and videos, takes
// writes, and keeps the restored state across a restart; a damaged backup and a
// restore over live data without --force change nothing.
func TestBackupAndRestoreIntoANewCluster(t *testing.T) {
	ctx := context.Background()
	src := start(t)
	acct, key := src.account("pro", 500)
	v := src.create(key, manualReq("duration_seconds", 5))["id"].(string)
	// The source's log runs well past the fresh node's: the backup's index
	// is above every index the new node has written when it restores it.
	for range 20 {
		if _, err := src.admin.GrantCredits(ctx, acct, 1); err != nil {
			t.Fatal(err)
		}
	}
	backedUp, err := src.admin.Account(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	var backup bytes.Buffer
	if _, err := src.admin.Backup(ctx, &backup); err != nil {
		t.Fatalf("backup: %v", err)
	}

	dst := start(t)
	// A damaged backup (one byte changed) is refused and changes nothing.
	bad := bytes.Clone(backup.Bytes())
	bad[len(bad)/2] ^= 0xff
	var ae *apierr.Error
	if _, err := dst.admin.Restore(ctx, bytes.NewReader(bad), false); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("restore of a damaged backup: %v, want 400", err)
	}
	if _, err := dst.admin.Account(ctx, acct); err == nil {
		t.Fatal("a refused restore left the account behind")
	}
	raw, err := dst.admin.Restore(ctx, bytes.NewReader(backup.Bytes()), false)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	// applied_index is the backup's own index, as before; raft_index is where
	// this cluster's log installed it: above the backup's index and above
	// every index the fresh node had written, and what its Raft reports.
	var restored struct {
		Restored     struct{ Index uint64 } `json:"restored"`
		AppliedIndex uint64                 `json:"applied_index"`
		RaftIndex    uint64                 `json:"raft_index"`
	}
	if err := json.Unmarshal(raw, &restored); err != nil {
		t.Fatalf("restore answer %s: %v", raw, err)
	}
	if restored.Restored.Index == 0 || restored.AppliedIndex != restored.Restored.Index || restored.RaftIndex <= restored.Restored.Index {
		t.Fatalf("restore answer %s: want applied_index the backup's index and raft_index above it", raw)
	}
	if st := dst.srv.Node.Stats()["last_snapshot_index"]; st != strconv.FormatUint(restored.RaftIndex, 10) {
		t.Fatalf("raft_index %d, but Raft's last snapshot is at %s", restored.RaftIndex, st)
	}
	check := func(h *harness) {
		t.Helper()
		if _, err := h.admin.Account(ctx, acct); err != nil {
			t.Fatalf("restored account: %v", err)
		}
		if r := h.do("GET", "/v1/videos/"+v, key, nil); r.Status != http.StatusOK {
			t.Fatalf("restored video: %d %s", r.Status, r.Body)
		}
	}
	check(dst)
	if a, _ := dst.admin.Account(ctx, acct); a.Credits != backedUp.Credits || a.Credits >= 520 {
		t.Fatalf("restored balance %d, want %d as backed up (the charge kept)", a.Credits, backedUp.Credits)
	}
	after := dst.create(key, manualReq("duration_seconds", 5))["id"].(string)
	for range 5 {
		if _, err := dst.admin.GrantCredits(ctx, acct, 100); err != nil {
			t.Fatal(err)
		}
	}
	want, err := dst.admin.Account(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot after the restore is taken at the new cluster's index.
	if _, err := dst.admin.Snapshot(ctx); err != nil {
		t.Fatalf("snapshot after restore: %v", err)
	}
	for range 3 { // and writes after it are in the log only
		if _, err := dst.admin.GrantCredits(ctx, acct, 1); err != nil {
			t.Fatal(err)
		}
	}
	want.Credits += 3

	// A cluster that holds data is not overwritten by accident.
	if _, err := dst.admin.Restore(ctx, bytes.NewReader(backup.Bytes()), false); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("restore over live data without force: %v, want 409", err)
	}

	// The restored state, and every write acknowledged after it, survive a
	// restart of the node.
	dst.stop()
	again := start(t, func(c *server.Config) { *c = dst.cfg })
	check(again)
	if a, err := again.admin.Account(ctx, acct); err != nil || a.Credits != want.Credits {
		t.Fatalf("after the restart: %+v, %v; want %d credits, as acknowledged before it", a, err, want.Credits)
	}
	if r := again.do("GET", "/v1/videos/"+after, key, nil); r.Status != http.StatusOK {
		t.Fatalf("the video created after the restore, after the restart: %d %s", r.Status, r.Body)
	}
}

// TestRestoreSpoolLeftByAStopRemoved: the upload of a restore a kill cut
// short (a file the size of a backup in the data directory) is removed
// when the node starts again.
func TestRestoreSpoolLeftByAStopRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	left := filepath.Join(dir, ".vidfarm-restore-123456")
	if err := os.WriteFile(left, []byte("half a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, func(c *server.Config) { c.DataDir = dir })
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the cut restore's upload is still there: %v", err)
	}
}
