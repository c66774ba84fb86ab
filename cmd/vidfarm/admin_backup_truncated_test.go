package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestAdminBackupRefusesATruncatedBackup runs `vidfarm admin backup` against
// a server that sends half a backup and ends the answer cleanly (a 200 with
// a Content-Length to match, as a server that failed partway used to): the
// command fails saying so and leaves no file behind; the whole backup is
// written.
func TestAdminBackupRefusesATruncatedBackup(t *testing.T) {
	f := fsm.New()
	for i := range 50 {
		id := "acc_" + strconv.Itoa(i)
		if _, err := f.ApplyCommand(&fsm.CreateAccount{AccountID: id, Name: id, Plan: "pro", Credits: 5, KeyID: "key_" + strconv.Itoa(i), Now: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var whole bytes.Buffer
	if err := f.WriteBackup(&whole); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Pointer[[]byte]
	half := whole.Bytes()[:whole.Len()/2]
	sent.Store(&half)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v1/backup" {
			http.NotFound(w, r)
			return
		}
		body := *sent.Load()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	defer srv.Close()

	dir := t.TempDir()
	out := filepath.Join(dir, "vidfarm.backup")
	run := func() (string, int) {
		cmd := exec.Command(vidfarmBinary(t), "admin", "--server", srv.URL, "--admin-token", "tok", "backup", "--out", out)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return stderr.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stderr.String(), 0
	}
	stderr, code := run()
	if code != 1 || !strings.Contains(stderr, "incomplete or damaged") || !strings.Contains(stderr, "run the backup again") {
		t.Fatalf("backup of a truncated answer: exit %d, stderr %q; want exit 1 saying the backup is incomplete", code, stderr)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a refused backup left %v behind", left)
	}

	all := whole.Bytes()
	sent.Store(&all)
	if stderr, code := run(); code != 0 {
		t.Fatalf("backup of a whole answer: exit %d, %s", code, stderr)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, whole.Bytes()) {
		t.Fatalf("the written backup: %d bytes, %v; want the %d bytes sent", len(got), err, whole.Len())
	}
}
