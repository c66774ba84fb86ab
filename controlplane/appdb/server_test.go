package appdb_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/appdb"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// farm is a real control-plane node with the bridge, restartable on its data dir.
type farm struct {
	t     *testing.T
	cfg   server.Config
	srv   *server.Server
	admin *admin.Client
}

func startFarm(t *testing.T, dsn string, opts ...func(*server.Config)) *farm {
	t.Helper()
	f := &farm{t: t, cfg: server.Config{
		DataDir: t.TempDir(), NodeID: "node1", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		RaftListen: "127.0.0.1:0", AdminToken: "test-admin-token", Limits: api.Limits{Disabled: true},
		Logger: slog.New(slog.DiscardHandler), AppDB: dsn, AppDBPoll: 20 * time.Millisecond, NoSync: true,
	}}
	for _, o := range opts {
		o(&f.cfg)
	}
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *farm) start() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.Start(ctx, f.cfg)
	if err != nil {
		f.t.Fatalf("start server: %v", err)
	}
	f.srv = srv
	f.admin = &admin.Client{Server: "http://" + srv.AdminAddr(), Token: f.cfg.AdminToken}
}

// stop closes the node; start again on the same data directory is a restart.
func (f *farm) stop() {
	if f.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = f.srv.Close(ctx)
	f.srv = nil
}

// call sends a /v1 request with an API key and returns the status and JSON body.
func (f *farm) call(method, path, key string, body any) (int, map[string]any) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.srv.PublicURL()+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// eventually polls cond until it holds or a minute passes.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v", what, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval of a condition, not a wait for an event
	}
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestAppKeysAndPlansReachTheAPI(t *testing.T) {
	dsn := appdb.NewTestDB(t)
	f := startFarm(t, dsn)
	pool := migratedPool(t, dsn)
	const key = "vf_live_createdbytheappxxxxxxxxxxxxxxxxxxxxxxxx"
	hash := sha256.Sum256([]byte(key))
	mustExec(t, pool, `INSERT INTO vidfarm_app_accounts (account_id, name, plan, credits) VALUES ('app_u1', 'User One', 'free', 0)`)
	mustExec(t, pool, `INSERT INTO vidfarm_app_api_keys (key_id, account_id, key_hash, key_hint) VALUES ('appkey_1', 'app_u1', $1, 'vf_live_cre')`, hash[:])
	eventually(t, "the app's key authenticates", func() error {
		if st, body := f.call("GET", "/v1/me", key, nil); st != http.StatusOK {
			return fmt.Errorf("GET /v1/me: %d %v", st, body)
		}
		return nil
	})
	st, v := f.call("POST", "/v1/videos", key, map[string]any{"mode": "manual", "prompt": "a red fox in snow"})
	if st != http.StatusCreated || v["status"] != "preview" {
		t.Fatalf("free video: %d %v, want a 201 preview", st, v)
	}
	id := v["id"].(string)
	if st, body := f.call("POST", "/v1/videos/"+id+"/render", key, nil); st != http.StatusForbidden {
		t.Fatalf("render on the free plan: %d %v, want 403", st, body)
	}
	mustExec(t, pool, `INSERT INTO vidfarm_app_plan_changes (account_id, plan) VALUES ('app_u1', 'pro')`)
	eventually(t, "the upgrade lets the preview render", func() error {
		if st, body := f.call("POST", "/v1/videos/"+id+"/render", key, nil); st != http.StatusOK || body["status"] != "queued" {
			return fmt.Errorf("render: %d %v", st, body)
		}
		return nil
	})
	mustExec(t, pool, `INSERT INTO vidfarm_app_api_key_revocations (key_id) VALUES ('appkey_1')`)
	eventually(t, "the revoked key stops working", func() error {
		if st, body := f.call("GET", "/v1/me", key, nil); st != http.StatusUnauthorized {
			return fmt.Errorf("GET /v1/me: %d %v", st, body)
		}
		return nil
	})
	eventually(t, "the app sees the video queued", func() error {
		var status string
		if err := pool.QueryRow(context.Background(), `SELECT status FROM vidfarm_videos WHERE video_id = $1`, id).Scan(&status); err != nil || status != "queued" {
			return fmt.Errorf("status %q, err %v", status, err)
		}
		return nil
	})
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// migratedPool connects to dsn once the farm's bridge has created its tables.
func migratedPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool := appdb.OpenPool(t, dsn)
	eventually(t, "the bridge's migrations", func() error {
		_, err := pool.Exec(context.Background(), `SELECT 1 FROM vidfarm_bridge_cursor LIMIT 1`)
		return err
	})
	return pool
}
