package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
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
	if _, err := dst.admin.Restore(ctx, bytes.NewReader(backup.Bytes()), false); err != nil {
		t.Fatalf("restore: %v", err)
	}
	check := func(h *harness) {
		t.Helper()
		a, err := h.admin.Account(ctx, acct)
		if err != nil || a.Credits >= 500 {
			t.Fatalf("restored account: %+v, %v (want the charge kept)", a, err)
		}
		if r := h.do("GET", "/v1/videos/"+v, key, nil); r.Status != http.StatusOK {
			t.Fatalf("restored video: %d %s", r.Status, r.Body)
		}
	}
	check(dst)
	if r := dst.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5)); r.Status != http.StatusCreated {
		t.Fatalf("create after restore: %d %s", r.Status, r.Body)
	}

	// A cluster that holds data is not overwritten by accident.
	if _, err := dst.admin.Restore(ctx, bytes.NewReader(backup.Bytes()), false); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("restore over live data without force: %v, want 409", err)
	}

	// The restored state is durable: it survives a restart of the node.
	dst.stop()
	again := start(t, func(c *server.Config) { *c = dst.cfg })
	check(again)
}
