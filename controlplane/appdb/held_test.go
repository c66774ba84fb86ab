package appdb

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/internal/fakes"
)

// openTx begins a transaction on its own connection to dsn that holds an
// xid (as one that wrote something does) and stays open until the test
// ends or the returned function ends it (commit true: commits); it
// returns the backend's pid too.
func openTx(t *testing.T, dsn string) (pid int32, end func(commit bool)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var xid string
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid(), pg_current_xact_id()::text`).Scan(&pid, &xid); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end = func(commit bool) {
		once.Do(func() {
			var err error
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Errorf("end the open transaction: %v", err)
			}
			conn.Close(ctx)
		})
	}
	t.Cleanup(func() { end(false) })
	return pid, end
}

// stepUntil steps the bridge until cond holds, for up to 20 s: other tests'
// transactions in the same database hold rows back for a moment too.
func stepUntil(t *testing.T, b *Bridge, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
		if _, err := b.Step(context.Background()); err != nil {
			t.Fatalf("step: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A transaction left open in another database of the server cannot write
// the app's tables, so the app's rows do not wait for it. They did: the
// bridge read only below the server-wide oldest open transaction, and a
// revocation waited as long as an unrelated session stayed in a
// transaction, with no lag shown.
func TestTransactionsOfOtherDatabasesHoldNothing(t *testing.T) {
	r := newRig(t)
	other, err := url.Parse(sharedDSN())
	if err != nil {
		t.Fatal(err)
	}
	other.Path = "/postgres"
	openTx(t, other.String())
	mustExec(t, r.pool, `INSERT INTO vidfarm_app_accounts (account_id, plan, credits) VALUES ('app_o', 'pro', 12)`)
	stepUntil(t, r.b, "the account still waits behind a transaction of the postgres database", func() bool {
		a, ok := r.fsm.Account("app_o")
		return ok && a.Credits == 12
	})
}

// Rows committed after a transaction of the app's database that is still
// open wait for it (it may yet write rows that sort before them); the
// bridge counts them, shows their age as the inbound lag, and logs which
// transaction holds them. A member that stopped leading reports itself
// not connected.
func TestRowsHeldBehindAnOpenTransaction(t *testing.T) {
	r := newRig(t)
	var logs fakes.LogBuffer
	r.b.cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	r.b.cfg.HeldWarnAfter = time.Nanosecond
	pid, end := openTx(t, r.dsn)
	mustExec(t, r.pool, `INSERT INTO vidfarm_app_accounts (account_id, plan, credits) VALUES ('app_h', 'pro', 5)`)
	// Another test's older transaction in this database may be named
	// first; the line naming this one comes once that one ends.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pid %d; the bridge's log:\n%s", pid, logs.String())
		}
	})
	stepUntil(t, r.b, "no warning names the open transaction", func() bool { return namesBlocker(logs.String(), pid) })
	st := r.b.Status()
	if st.InboundHeldRows != 1 || st.InboundLagSeconds <= 0 {
		t.Errorf("held %d rows, inbound lag %v s: want the account's row, waiting", st.InboundHeldRows, st.InboundLagSeconds)
	}
	if got := gauge(t, r.b.Metrics(), "vidfarm_appdb_inbound_held_rows"); got != 1 {
		t.Errorf("vidfarm_appdb_inbound_held_rows %v, want 1", got)
	}
	if _, ok := r.fsm.Account("app_h"); ok {
		t.Fatal("the account applied before the transaction ahead of it ended")
	}
	end(true)
	stepUntil(t, r.b, "the account never applied once the transaction committed", func() bool {
		_, ok := r.fsm.Account("app_h")
		return ok
	})
	stepUntil(t, r.b, "rows still counted as held", func() bool { return r.b.Status().InboundHeldRows == 0 })

	if !r.b.Status().Connected {
		t.Fatal("the leader's bridge is not connected")
	}
	r.b.cfg.Node = notLeader{r.node}
	if r.b.Status().Connected || gauge(t, r.b.Metrics(), "vidfarm_appdb_connected") != 0 {
		t.Error("a member that no longer leads still reports the app database connected")
	}
}

// notLeader is a node that has lost its leadership.
type notLeader struct{ Node }

func (notLeader) IsLeader() bool { return false }

// gauge is the value of the collector's series name (without labels).
func gauge(t *testing.T, c prometheus.Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// namesBlocker reports whether a warning about held rows in the bridge's
// log names the backend pid.
func namesBlocker(log string, pid int32) bool {
	for line := range strings.SplitSeq(log, "\n") {
		var l struct {
			Msg      string  `json:"msg"`
			PID      float64 `json:"pid"`
			Held     float64 `json:"held_rows"`
			Database string  `json:"database"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && strings.Contains(l.Msg, "wait behind a transaction") &&
			int32(l.PID) == pid && l.Held >= 1 && l.Database != "" {
			return true
		}
	}
	return false
}

// A purchases table made before the migration and kept by it, without the
// unique index that makes a purchase apply once, stops the bridge with an
// error that says what to add; with the index it goes on.
func TestMigrateRefusesPurchasesThatMayRepeat(t *testing.T) {
	dsn := NewTestDB(t)
	pool := OpenPool(t, dsn)
	mustExec(t, pool, `CREATE SEQUENCE vidfarm_inbound_seq`)
	mustExec(t, pool, `CREATE TABLE vidfarm_app_purchases (
		id bigint PRIMARY KEY DEFAULT nextval('vidfarm_inbound_seq'), xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
		purchase_id text, account_id text, credits bigint, created_at timestamptz NOT NULL DEFAULT now())`)
	ctx := context.Background()
	err := Migrate(ctx, pool)
	if !errors.Is(err, ErrPurchasesNotUnique) || !strings.Contains(err.Error(), "CREATE UNIQUE INDEX") {
		t.Fatalf("migrate: %v, want ErrPurchasesNotUnique saying what to add", err)
	}
	mustExec(t, pool, `CREATE UNIQUE INDEX ON vidfarm_app_purchases (purchase_id)`)
	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("migrate with the index: %v", err)
	}
}

// A search_path naming a schema that does not exist says to create it.
func TestMigrateNamesAMissingSchema(t *testing.T) {
	pool := OpenPool(t, withParam(sharedDSN(), "search_path", "vftest_no_such_schema"))
	err := Migrate(context.Background(), pool)
	if err == nil || !strings.Contains(err.Error(), "CREATE SCHEMA") {
		t.Fatalf("migrate: %v, want an error saying to create the schema", err)
	}
}
