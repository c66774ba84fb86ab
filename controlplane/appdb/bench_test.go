package appdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkInboundPurchases: b.N purchase rows already in the app database,
// applied through Raft (fsync off) and their cursor committed, in batches of 500.
func BenchmarkInboundPurchases(b *testing.B) {
	r := newRig(b)
	f, br, pool := r.fsm, r.b, r.pool
	mustExec(b, pool, `INSERT INTO vidfarm_app_accounts (account_id, plan) VALUES ('bench', 'pro')`)
	stepUntilIdle(b, br)
	mustExec(b, pool, `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits)
		SELECT 'p' || i, 'bench', 1 FROM generate_series(1, $1::int) AS i`, b.N)
	b.ResetTimer()
	start := time.Now()
	stepUntilIdle(b, br)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
	b.StopTimer()
	if a, _ := f.Account("bench"); a.Credits != int64(b.N) {
		b.Fatalf("balance %d after %d purchases", a.Credits, b.N)
	}
}

// BenchmarkOutboundExport: b.N ledger entries waiting in the FSM, written to the
// app database (ledger, balances, cursor) in transactions of 500.
func BenchmarkOutboundExport(b *testing.B) {
	r := newRig(b)
	n, br := r.node, r.b
	ctx := context.Background()
	rows := []fsm.AppRow{{Mark: fsm.InboundMark{Xid: 1, Seq: 1}, Table: fsm.AppAccounts, AccountID: "bench", Plan: fsm.PlanPro}}
	for i := range b.N {
		rows = append(rows, fsm.AppRow{Mark: fsm.InboundMark{Xid: 1, Seq: int64(i + 2)}, Table: fsm.AppPurchases,
			AccountID: "bench", Credits: 1, PurchaseID: fmt.Sprint("p", i)})
	}
	if _, err := n.Apply(ctx, &fsm.AppRows{Rows: rows}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	stepUntilIdle(b, br)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
	b.StopTimer()
	if st := br.Status(); st.OutboundPending != 0 {
		b.Fatalf("%d still pending", st.OutboundPending)
	}
}
