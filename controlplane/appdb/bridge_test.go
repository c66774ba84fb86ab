package appdb

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// testNode is a real single-node Raft cluster with its FSM.
func testNode(t testing.TB) (*raftnode.Node, *fsm.FSM) {
	t.Helper()
	f := fsm.New()
	n, err := raftnode.Open(raftnode.Config{DataDir: filepath.Join(t.TempDir(), "raft"), NodeID: "n1", RaftAddr: "127.0.0.1:0",
		NoSync: true, Logger: slog.New(slog.DiscardHandler)}, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return n, f
}

func testBridge(t testing.TB, dsn string, n *raftnode.Node, f *fsm.FSM) *Bridge {
	t.Helper()
	b, err := New(Config{DSN: dsn, FSM: f, Node: n, Poll: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.closePool)
	return b
}

// rig is a fresh schema, a real Raft node and a bridge that has migrated and
// switched export on.
type rig struct {
	dsn  string
	node *raftnode.Node
	fsm  *fsm.FSM
	b    *Bridge
	pool *pgxpool.Pool
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{dsn: NewTestDB(t)}
	r.node, r.fsm = testNode(t)
	r.b = testBridge(t, r.dsn, r.node, r.fsm)
	stepUntilIdle(t, r.b)
	r.pool = OpenPool(t, r.dsn)
	return r
}

// stepUntilIdle runs steps until one finds nothing more to do.
func stepUntilIdle(t testing.TB, b *Bridge) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		more, err := b.Step(context.Background())
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		if !more {
			return
		}
	}
	t.Fatal("the bridge never caught up")
}

func mustExec(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestPurchaseOnceWhenKilledBeforeCursorCommit applies a purchase, "kills" the
// bridge before its cursor commits, and checks a new bridge grants nothing twice.
func TestPurchaseOnceWhenKilledBeforeCursorCommit(t *testing.T) {
	r := newRig(t)
	dsn, n, f, first, pool := r.dsn, r.node, r.fsm, r.b, r.pool
	mustExec(t, pool, `INSERT INTO vidfarm_app_accounts (account_id, name, plan, credits) VALUES ('app_a', 'A', 'pro', 10)`)
	mustExec(t, pool, `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('pur_1', 'app_a', 500)`)

	ctx := context.Background()
	cur, err := readInboundCursor(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	horizon, _, err := readHorizon(ctx, pool, cur)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := fetchInbound(ctx, pool, cur, horizon, 100)
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %+v, err %v: want the account and the purchase", rows, err)
	}
	if _, err := first.applyRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// Killed here: applied in the FSM, the cursor in Postgres not moved.
	first.closePool()

	second := testBridge(t, dsn, n, f)
	stepUntilIdle(t, second)
	stepUntilIdle(t, second)
	a, ok := f.Account("app_a")
	if !ok || a.Credits != 510 {
		t.Fatalf("account %+v (found %v), want 510 credits: one opening balance and one purchase", a, ok)
	}
	if got := count(t, pool, `SELECT count(*) FROM vidfarm_ledger WHERE ref = 'pur_1'`); got != 1 {
		t.Fatalf("%d ledger rows for the purchase, want 1", got)
	}
	if got := count(t, pool, `SELECT credits FROM vidfarm_balances WHERE account_id = 'app_a'`); got != 510 {
		t.Fatalf("exported balance %d, want 510", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM vidfarm_inbound_quarantine`); got != 0 {
		t.Fatalf("%d rows quarantined, want none", got)
	}
	if got := count(t, pool, `SELECT seq FROM vidfarm_bridge_cursor WHERE name = 'inbound'`); got != rows[1].ID {
		t.Fatalf("inbound cursor at %d, want the purchase's id %d", got, rows[1].ID)
	}
}

func TestMalformedRowsQuarantined(t *testing.T) {
	r := newRig(t)
	f, b, pool := r.fsm, r.b, r.pool
	bad := []struct {
		name, sql, reason string
	}{
		{"negative purchase", `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_neg', 'app_q', -5)`, "credits must be a positive number"},
		{"purchase without credits", `INSERT INTO vidfarm_app_purchases (purchase_id, account_id) VALUES ('p_null', 'app_q')`, "credits must be a positive number"},
		{"unknown plan", `INSERT INTO vidfarm_app_plan_changes (account_id, plan) VALUES ('app_q', 'gold')`, "plan must be free, pro or max"},
		{"short key hash", `INSERT INTO vidfarm_app_api_keys (key_id, account_id, key_hash) VALUES ('k_short', 'app_q', '\x0102')`, "key_hash must be the 32-byte SHA-256"},
		{"purchase for nobody", `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_nobody', 'app_nobody', 5)`, "account not found"},
		{"revoking an unknown key", `INSERT INTO vidfarm_app_api_key_revocations (key_id) VALUES ('k_none')`, "api key not found"},
	}
	mustExec(t, pool, `INSERT INTO vidfarm_app_accounts (account_id, plan) VALUES ('app_q', 'pro')`)
	for _, c := range bad {
		mustExec(t, pool, c.sql)
	}
	mustExec(t, pool, `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_good', 'app_q', 7)`)
	stepUntilIdle(t, b)
	if a, _ := f.Account("app_q"); a.Credits != 7 {
		t.Fatalf("balance %d, want 7: only the good purchase behind the bad rows", a.Credits)
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if n := count(t, pool, `SELECT count(*) FROM vidfarm_inbound_quarantine WHERE position($1 in reason) > 0`, c.reason); n == 0 {
				t.Fatalf("no quarantined row says %q", c.reason)
			}
		})
	}
	if got := count(t, pool, `SELECT count(*) FROM vidfarm_inbound_quarantine`); got != int64(len(bad)) {
		t.Fatalf("%d quarantined, want %d", got, len(bad))
	}
	if st := f.AppExport(); len(st.Refused) != 0 {
		t.Fatalf("the FSM still holds refusals after quarantine: %+v", st.Refused)
	}
}
