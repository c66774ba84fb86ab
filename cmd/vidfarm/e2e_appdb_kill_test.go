package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/admin"
)

// The app-database kill test (issue 7) runs the real `vidfarm server --app-db`
// and SIGKILLs it at random moments while the test, playing the app, opens
// accounts and keeps inserting purchases and plan changes. Whatever instant the bridge
// dies at (between the FSM apply and the cursor commit, mid-export, during
// its migrations), every purchase must end up as exactly one grant.

const (
	appKillAccounts = 4
	appKillKills    = 4
	// appKillOpening is each account's opening balance in the app row.
	appKillOpening = 10
	// appKillEvery paces the app's inserts: a steady stream, not a flood that
	// would keep 2 busy cores from catching up within the test's minute.
	appKillEvery = 15 * time.Millisecond
)

// appDBForTest returns the DSN of a fresh schema on the test Postgres (as in
// controlplane/appdb's tests), dropped when the test ends.
func appDBForTest(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("VIDFARM_TEST_PG")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
			t.Fatalf("no PostgreSQL (%v) and VIDFARM_REQUIRE_TOOLS is set: run scripts/deps.sh", err)
		}
		t.Skipf("SKIPPING: no PostgreSQL for the app-database kill test (%v); set VIDFARM_TEST_PG or run scripts/deps.sh", err)
	}
	schema := "vfkill_" + strings.ToLower(rand.Text()[:12])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	// The connection stays open for the test, so dropping the schema needs no new one.
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
		_ = conn.Close(ctx)
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// startAppDBServer runs `vidfarm server --app-db dsn` on dataDir.
func startAppDBServer(t *testing.T, dataDir, dsn string) *proc {
	t.Helper()
	p, m := startProc(t, "server", []string{"server", "--data-dir", dataDir, "--app-db", dsn,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0",
		"--admin-token", durabilityToken, "--rate-limits=false", "--log-level", "info"}, nil, "control plane ready")
	adm, _ := m["admin"].(string)
	if adm == "" {
		t.Fatalf("ready line without the admin address: %v", m)
	}
	p.admin = &admin.Client{Server: "http://" + adm, Token: durabilityToken}
	return p
}

// appWriter plays the app: it inserts rows and remembers what it committed.
type appWriter struct {
	pool *pgxpool.Pool

	mu        sync.Mutex
	expected  map[string]int64  // account -> opening + purchases committed
	plan      map[string]string // account -> last plan change committed
	purchases int
	err       error
}

func (w *appWriter) exec(ctx context.Context, sql string, args ...any) error {
	if _, err := w.pool.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", strings.Fields(sql)[2], err)
	}
	return nil
}

func (w *appWriter) openAccounts(ctx context.Context) error {
	for i := range appKillAccounts {
		acct := fmt.Sprintf("app-acct-%d", i)
		if err := w.exec(ctx, `INSERT INTO vidfarm_app_accounts (account_id, name, plan, credits) VALUES ($1, $2, 'free', $3)`,
			acct, "kill test "+acct, appKillOpening); err != nil {
			return err
		}
		w.mu.Lock()
		w.expected[acct], w.plan[acct] = appKillOpening, "free"
		w.mu.Unlock()
	}
	return nil
}

// run inserts a purchase every appKillEvery (and a plan change every tenth)
// until ctx ends. Only committed rows count in what it expects.
func (w *appWriter) run(ctx context.Context) {
	plans := []string{"free", "pro", "max"}
	tick := time.NewTicker(appKillEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		acct := fmt.Sprintf("app-acct-%d", n%appKillAccounts)
		credits := int64(n%7 + 1)
		err := w.exec(context.Background(), `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ($1, $2, $3)`,
			fmt.Sprintf("kill-pur-%d", n), acct, credits)
		plan := plans[n/10%len(plans)]
		if err == nil && n%10 == 9 {
			err = w.exec(context.Background(), `INSERT INTO vidfarm_app_plan_changes (account_id, plan) VALUES ($1, $2)`, acct, plan)
		}
		w.mu.Lock()
		if err != nil {
			w.err = err
			w.mu.Unlock()
			return
		}
		w.expected[acct] += credits
		w.purchases++
		if n%10 == 9 {
			w.plan[acct] = plan
		}
		w.mu.Unlock()
	}
}

// fsmCredits sums the FSM's balances over the writer's accounts (an account
// the bridge has not opened yet counts 0).
func fsmCredits(p *proc) int64 {
	var sum int64
	for i := range appKillAccounts {
		if a, err := p.admin.Account(context.Background(), fmt.Sprintf("app-acct-%d", i)); err == nil {
			sum += a.Credits
		}
	}
	return sum
}

func randN(n int64) int64 {
	v, _ := rand.Int(rand.Reader, big.NewInt(n))
	return v.Int64()
}

func TestAppDBBridgeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary against PostgreSQL")
	}
	dsn := appDBForTest(t)
	dir := filepath.Join(t.TempDir(), "server")
	srv := startAppDBServer(t, dir, dsn)

	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	eventually(t, 30*time.Second, "the bridge's migrations", func() bool {
		_, err := pool.Exec(context.Background(), `SELECT 1 FROM vidfarm_bridge_cursor LIMIT 1`)
		return err == nil
	})

	w := &appWriter{pool: pool, expected: map[string]int64{}, plan: map[string]string{}}
	if err := w.openAccounts(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); w.run(ctx) }()
	defer func() { stop(); <-writerDone }()

	// Each kill comes once the FSM has taken a random number of credits more
	// than at the start of this run (0: during startup and migrations), read
	// with a tight poll so the instant falls anywhere in a batch's life.
	for k := range appKillKills {
		base := fsmCredits(srv)
		want := randN(60)
		if k == 0 {
			want++ // the first run must have applied something
		}
		deadline := time.Now().Add(20 * time.Second)
		for fsmCredits(srv) < base+want {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: the FSM did not take %d credits in 20 s", k, want)
			}
			time.Sleep(5 * time.Millisecond) // polling interval
		}
		srv.kill()
		t.Logf("kill %d: SIGKILL after the FSM took %d+ credits", k+1, want)
		srv = startAppDBServer(t, dir, dsn)
	}
	stop()
	<-writerDone
	if w.err != nil {
		t.Fatalf("the app's inserts: %v", w.err)
	}

	deadline := time.Now().Add(40 * time.Second)
	for err := appDBMatches(srv, pool, w); err != nil; err = appDBMatches(srv, pool, w) {
		if time.Now().After(deadline) {
			t.Fatalf("40 s after the last restart the bridge has not caught up:\n%v", err)
		}
		time.Sleep(e2ePoll) // polling interval
	}
	t.Logf("%d purchases over %d accounts, %d SIGKILLs: every purchase one grant", w.purchases, appKillAccounts, appKillKills)
}

// appDBMatches says how the FSM and the outbound tables differ from what the
// app committed, or nil when every purchase is exactly one grant everywhere.
func appDBMatches(p *proc, pool *pgxpool.Pool, w *appWriter) error {
	ctx := context.Background()
	var errs []error
	for acct, want := range w.expected {
		a, err := p.admin.Account(ctx, acct)
		if err != nil {
			return fmt.Errorf("account %s: %w", acct, err)
		}
		var sum, bal, grants, purchases int64
		// The ledger counts from the account's latest opening entry, if any.
		var fromIndex, fromSeq int64
		err = pool.QueryRow(ctx, `SELECT fsm_index, seq FROM vidfarm_ledger WHERE account_id = $1 AND kind = 'opening'
			ORDER BY fsm_index DESC, seq DESC LIMIT 1`, acct).Scan(&fromIndex, &fromSeq)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM vidfarm_ledger
			WHERE account_id = $1 AND (fsm_index, seq) >= ($2, $3)`, acct, fromIndex, fromSeq).Scan(&sum); err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT credits FROM vidfarm_balances WHERE account_id = $1), -1)`, acct).Scan(&bal); err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM vidfarm_ledger WHERE account_id = $1 AND kind = 'grant' AND ref LIKE 'kill-pur-%'`, acct).Scan(&grants); err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM vidfarm_app_purchases WHERE account_id = $1`, acct).Scan(&purchases); err != nil {
			return err
		}
		if a.Credits != want || sum != want || bal != want {
			errs = append(errs, fmt.Errorf("account %s: app committed %d credits, FSM balance %d, ledger sum %d, exported balance %d", acct, want, a.Credits, sum, bal))
		}
		if grants != purchases {
			errs = append(errs, fmt.Errorf("account %s: %d purchase rows, %d purchase grants in the ledger", acct, purchases, grants))
		}
		if a.Plan != w.plan[acct] {
			errs = append(errs, fmt.Errorf("account %s: last plan change %q, FSM plan %q", acct, w.plan[acct], a.Plan))
		}
	}
	var dup, quarantined int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT ref FROM vidfarm_ledger WHERE ref IS NOT NULL GROUP BY ref HAVING count(*) > 1) d`).Scan(&dup); err != nil {
		return err
	}
	if dup != 0 {
		errs = append(errs, fmt.Errorf("%d purchases granted more than once in the ledger", dup))
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM vidfarm_inbound_quarantine`).Scan(&quarantined); err != nil {
		return err
	}
	if quarantined != 0 {
		errs = append(errs, fmt.Errorf("%d well-formed rows quarantined", quarantined))
	}
	return errors.Join(errs...)
}
