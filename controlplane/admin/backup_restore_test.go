package admin

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
)

const (
	keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyB = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f"
)

func mustKey(t *testing.T, s string) *sealed.Key {
	t.Helper()
	k, err := sealed.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// backupWith is a backup of a state holding one account and a webhook per
// secret; seal seals each (nil: kept plain).
func backupWith(t *testing.T, seal *sealed.Key, secrets ...string) []byte {
	t.Helper()
	f := fsm.New()
	if _, err := f.ApplyCommand(&fsm.CreateAccount{AccountID: "acc_1", Name: "a", Plan: "pro", Credits: 5, KeyID: "key_1", Now: 1}); err != nil {
		t.Fatal(err)
	}
	for i, s := range secrets {
		id := "whk_" + string(rune('a'+i))
		if _, err := f.ApplyCommand(&fsm.CreateWebhook{WebhookID: id, AccountID: "acc_1", URL: "https://example.com/hook",
			Events: fsm.EventTypes[:1], Secret: seal.Seal(s, id), Now: 2}); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := f.WriteBackup(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// entries lists what dir holds.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// A restore checks, before Raft sees the backup, that this node can open
// its sealed webhook secrets: with another key, or none, it refuses and
// says which key is missing, and changes nothing; with the backup's key
// among its keys, or with plain secrets, it restores. The upload is spooled
// in the data directory, and the answer says where Raft installed it.
func TestRestoreChecksTheSecretsKey(t *testing.T) {
	sealedA := backupWith(t, mustKey(t, keyA), "s1", "s2")
	plain := backupWith(t, nil, "s1")
	cases := []struct {
		name    string
		backup  []byte
		key     string // the node's --secrets-key; "" for none
		refused bool
		noKey   bool
	}{
		{name: "sealed, the node has another key", backup: sealedA, key: keyB, refused: true},
		{name: "sealed, the node has no key", backup: sealedA, refused: true, noKey: true},
		{name: "sealed, the backup's key among the node's", backup: sealedA, key: keyB + "," + keyA},
		{name: "sealed, the node has the backup's key", backup: sealedA, key: keyA},
		{name: "plain, the node has a key", backup: plain, key: keyB},
		{name: "plain, the node has none", backup: plain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var key *sealed.Key
			if tc.key != "" {
				key = mustKey(t, tc.key)
			}
			var spooledIn string
			c := &fakeCluster{onRestore: func(r io.Reader) {
				if f, ok := r.(*os.File); ok {
					spooledIn = filepath.Dir(f.Name())
				}
			}}
			f := fsm.New()
			h := leaderHandler(t, c, f, map[string]string{"last_snapshot_index": "77"}, func(cfg *Config) { cfg.DataDir, cfg.Secrets = dir, key })
			code, env, raw := post(t, h, "/admin/v1/restore", bytes.NewReader(tc.backup))
			if tc.refused {
				d := env.Error.Details
				if code != http.StatusConflict || d["reason"] != "secrets_key_mismatch" || d["not_opening"] != float64(2) ||
					d["sealed_secrets"] != float64(2) || d["node_has_secrets_key"] != !tc.noKey || !strings.Contains(env.Error.Message, "--secrets-key") {
					t.Fatalf("restore: %d %s, want 409 secrets_key_mismatch naming 2 of 2 secrets", code, raw)
				}
				if len(c.restored) != 0 || f.Stats().Accounts != 0 {
					t.Fatalf("a refused restore reached Raft (%v) or the state (%d accounts)", c.restored, f.Stats().Accounts)
				}
			} else {
				if code != http.StatusOK || len(c.restored) != 1 {
					t.Fatalf("restore: %d %s, want 200 and one Raft restore (%v)", code, raw, c.restored)
				}
				if !bytes.Contains(raw, []byte(`"raft_index":77`)) || !bytes.Contains(raw, []byte(`"applied_index":`)) {
					t.Fatalf("restore answer %s: want raft_index 77 beside applied_index", raw)
				}
				if spooledIn != dir {
					t.Fatalf("the upload was spooled in %q, want the data directory %q", spooledIn, dir)
				}
			}
			if left := entries(t, dir); len(left) != 0 {
				t.Fatalf("the restore left %v in the data directory", left)
			}
		})
	}
}

// A backup that fails before its first byte is an error answer; one that
// fails after it cuts the connection, so the client's read fails instead of
// ending cleanly on a truncated backup.
func TestBackupStreamFailureIsVisible(t *testing.T) {
	s := &server{cfg: Config{Logger: quiet()}}
	fail := errors.New("state store gone")
	for _, tc := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"before the first byte", func(io.Writer) error { return fail }},
		{"partway", func(w io.Writer) error {
			if _, err := w.Write(bytes.Repeat([]byte{1}, 64<<10)); err != nil {
				return err
			}
			return fail
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/octet-stream")
				s.streamBackup(w, r, tc.write)
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, rerr := io.ReadAll(resp.Body)
			if tc.name == "partway" {
				if resp.StatusCode != http.StatusOK || !errors.Is(rerr, io.ErrUnexpectedEOF) {
					t.Fatalf("%d, read %d bytes, %v: want 200 and a read that fails with an unexpected EOF", resp.StatusCode, len(body), rerr)
				}
				return
			}
			if resp.StatusCode != http.StatusServiceUnavailable || rerr != nil || !bytes.Contains(body, []byte("state store gone")) ||
				resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s %q (%v): want the 503 envelope naming the cause", resp.StatusCode, resp.Header.Get("Content-Type"), body, rerr)
			}
		})
	}
}

// Through the real route: a state file that cannot be read answers an
// error, not an empty 200 a client would save as a backup.
func TestBackupOfAnUnreadableStateAnswersAnError(t *testing.T) {
	f, err := fsm.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h := leaderHandler(t, &fakeCluster{}, f, nil)
	r := httptest.NewRequest(http.MethodGet, "/admin/v1/backup", nil)
	r.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"upstream_error"`) {
		t.Fatalf("backup of a closed state: %d %s", rec.Code, rec.Body)
	}
}
