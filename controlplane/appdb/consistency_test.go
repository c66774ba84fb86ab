package appdb_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/appdb"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// workload drives every kind of movement on a farm: creates (charges), operator
// fails (refunds), admin grants, app debits and purchases in the app database.
type workload struct {
	t        *testing.T
	accounts []string
	keys     []string
	videos   []string
	n        int
}

func newWorkload(t *testing.T, f *farm, accounts int) *workload {
	t.Helper()
	w := &workload{t: t}
	for i := range accounts {
		a, err := f.admin.CreateAccount(context.Background(), fmt.Sprintf("acct %d", i), "pro", 100000)
		if err != nil {
			t.Fatal(err)
		}
		w.accounts, w.keys = append(w.accounts, a.AccountID), append(w.keys, a.APIKey)
	}
	return w
}

// round does one of everything per account; pool nil means Postgres is down, so
// the app writes nothing.
func (w *workload) round(f *farm, pool *pgxpool.Pool) {
	w.t.Helper()
	ctx := context.Background()
	for i, acct := range w.accounts {
		w.n++
		var ids []string
		for range 2 {
			var id string
			// A 503 is retryable (a leader change settling); the test checks the
			// FSM against Postgres, so a retried create that did commit is harmless.
			eventually(w.t, "create a video", func() error {
				st, v := f.call("POST", "/v1/videos", w.keys[i], map[string]any{"mode": "manual", "prompt": fmt.Sprintf("fox %d", w.n)})
				if st != http.StatusCreated {
					return fmt.Errorf("create video: %d %v", st, v)
				}
				id = v["id"].(string)
				return nil
			})
			ids = append(ids, id)
		}
		w.videos = append(w.videos, ids...)
		if _, err := f.admin.FailVideo(ctx, ids[0], "test refund"); err != nil {
			w.t.Fatal(err)
		}
		eventually(w.t, "grant", func() error { _, err := f.admin.GrantCredits(ctx, acct, 13); return err })
		eventually(w.t, "debit", func() error { _, err := f.admin.Debit(ctx, acct, 3, fmt.Sprintf("render-%d", w.n)); return err })
		if pool != nil {
			mustExec(w.t, pool, `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ($1, $2, 100)`,
				fmt.Sprintf("pur-%d", w.n), acct)
		}
	}
}

// matches says how the app database differs from the FSM, or nil when it matches:
// per account, ledger sum = exported balance = FSM balance; per video, its status.
func (w *workload) matches(f *farm, pool *pgxpool.Pool) error {
	ctx := context.Background()
	for _, acct := range w.accounts {
		a, _ := f.srv.Node.FSM.Account(acct)
		var sum, bal int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM vidfarm_ledger WHERE account_id = $1`, acct).Scan(&sum); err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT credits FROM vidfarm_balances WHERE account_id = $1), -1)`, acct).Scan(&bal); err != nil {
			return err
		}
		if sum != a.Credits || bal != a.Credits {
			return fmt.Errorf("account %s: ledger sum %d, exported balance %d, FSM balance %d", acct, sum, bal, a.Credits)
		}
	}
	for i, id := range w.videos {
		v, ok := f.srv.Node.FSM.Video(w.accounts[i/2%len(w.accounts)], id)
		var status string
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT status FROM vidfarm_videos WHERE video_id = $1), '')`, id).Scan(&status); err != nil {
			return err
		}
		if !ok || status != v.Status {
			return fmt.Errorf("video %s: exported %q, FSM %q", id, status, v.Status)
		}
	}
	var dup int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT ref FROM vidfarm_ledger WHERE ref IS NOT NULL GROUP BY ref HAVING count(*) > 1) d`).Scan(&dup); err != nil || dup != 0 {
		return fmt.Errorf("%d purchases or debits counted twice (err %v)", dup, err)
	}
	return nil
}

func TestOutboundMatchesFSMAcrossRestarts(t *testing.T) {
	dsn := appdb.NewTestDB(t)
	f := startFarm(t, dsn)
	pool := migratedPool(t, dsn)
	w := newWorkload(t, f, 3)
	for r := range 4 {
		w.round(f, pool)
		if r%2 == 0 {
			// The leader (and its bridge) goes down mid-run and comes back on its log.
			f.stop()
			f.start()
		}
	}
	eventually(t, "the app database matches the FSM", func() error { return w.matches(f, pool) })
	// A row can still be on its way when the match first holds (one run read
	// one pending): polled, as the match is; a row stuck pending still fails.
	eventually(t, "the bridge has nothing pending", func() error {
		if st := f.srv.Bridge().Status(); st.OutboundPending != 0 || !st.Connected {
			return fmt.Errorf("status after catching up: %+v", st)
		}
		return nil
	})
}

func TestPostgresStoppedAndRestartedLosesNothing(t *testing.T) {
	pg := appdb.StartCluster(t)
	f := startFarm(t, pg.DSN())
	pool := migratedPool(t, pg.DSN())
	w := newWorkload(t, f, 2)
	w.round(f, pool)
	eventually(t, "exported before the outage", func() error { return w.matches(f, pool) })

	pg.Stop()
	w.round(f, nil) // the API keeps serving while Postgres is down
	eventually(t, "the bridge reports the outage and its lag", func() error {
		var st struct {
			AppDB appdb.Status `json:"app_db"`
		}
		raw, err := f.admin.ClusterStatus(context.Background())
		if err != nil {
			return err
		}
		if err := jsonUnmarshal(raw, &st); err != nil {
			return err
		}
		if st.AppDB.Connected || st.AppDB.OutboundPending == 0 || st.AppDB.LastError == "" {
			return fmt.Errorf("status %+v", st.AppDB)
		}
		metrics, err := f.admin.Do(context.Background(), "GET", "/metrics", nil)
		if err != nil {
			return err
		}
		if !strings.Contains(string(metrics), `vidfarm_appdb_lag_seconds{direction="outbound"}`) || !strings.Contains(string(metrics), "vidfarm_appdb_connected 0") {
			return fmt.Errorf("metrics lack the bridge's lag or show it connected")
		}
		return nil
	})
	pg.Start()
	pool.Reset() // the test's own connections died with the server
	w.round(f, pool)
	eventually(t, "caught up after Postgres returned", func() error { return w.matches(f, pool) })
}

// TestLeaderChangeLosesNothing runs three nodes with the same app database, stops
// the leader mid-run and checks the new leader's bridge carries on from the cursors.
func TestLeaderChangeLosesNothing(t *testing.T) {
	dsn := appdb.NewTestDB(t)
	blobs := t.TempDir()
	n1 := startFarm(t, dsn, func(c *server.Config) { c.NodeID, c.BlobDir = "n1", blobs })
	join := func(id string) func(*server.Config) {
		return func(c *server.Config) { c.NodeID, c.BlobDir, c.Join = id, blobs, "http://"+n1.srv.AdminAddr() }
	}
	n2 := startFarm(t, dsn, join("n2"))
	n3 := startFarm(t, dsn, join("n3"))
	pool := migratedPool(t, dsn)
	w := newWorkload(t, n2, 2) // through a follower, forwarded to the leader
	w.round(n2, pool)
	eventually(t, "exported before the leader stops", func() error { return w.matches(n1, pool) })
	w.round(n3, pool)
	n1.stop()
	eventually(t, "a new leader takes writes", func() error {
		if st, body := n3.call("GET", "/v1/me", w.keys[0], nil); st != http.StatusOK {
			return fmt.Errorf("GET /v1/me: %d %v", st, body)
		}
		if _, err := n3.admin.GrantCredits(context.Background(), w.accounts[0], 1); err != nil {
			return err
		}
		return nil
	})
	w.round(n3, pool)
	eventually(t, "the app database matches the FSM after the leader change", func() error { return w.matches(n3, pool) })
	eventually(t, "the new leader's bridge reports itself active", func() error {
		for _, f := range []*farm{n2, n3} {
			if st := f.srv.Bridge().Status(); st.Active && st.Connected && st.OutboundPending == 0 {
				return nil
			}
		}
		return fmt.Errorf("no node's bridge is active and caught up")
	})
}
