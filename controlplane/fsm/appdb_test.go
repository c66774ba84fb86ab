package fsm_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func row(xid uint64, seq int64, table string) *fsm.AppRow {
	return &fsm.AppRow{Mark: fsm.InboundMark{Xid: xid, Seq: seq}, Table: table, Now: t0}
}

func appRow(t *testing.T, w *world, r *fsm.AppRow) fsm.AppRowResult {
	t.Helper()
	return must(w, &fsm.AppRows{Rows: []fsm.AppRow{*r}})[0]
}

// ledgerSums adds up the pending ledger per account.
func ledgerSums(f *fsm.FSM) map[string]int64 {
	sums := map[string]int64{}
	for _, e := range f.PendingExport(0, 1<<30).Ledger {
		sums[e.AccountID] += e.Amount
	}
	return sums
}

func TestAppRowsApplyOnceInOrder(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.must(&fsm.SetAppExport{On: true, Now: t0})
			acct := row(10, 1, fsm.AppAccounts)
			acct.AccountID, acct.Plan, acct.Credits = "app_1", fsm.PlanFree, 5
			buy := row(10, 2, fsm.AppPurchases)
			buy.AccountID, buy.Credits, buy.PurchaseID = "app_1", 100, "pur_1"
			for _, r := range []*fsm.AppRow{acct, buy} {
				if res := appRow(t, w, r); !res.Applied {
					t.Fatalf("%s: %+v, want applied", r.Table, res)
				}
			}
			// The bridge crashed before committing its cursor and sends both again.
			for _, r := range []*fsm.AppRow{acct, buy} {
				if res := appRow(t, w, r); !res.Duplicate || res.Applied {
					t.Fatalf("%s again: %+v, want a duplicate", r.Table, res)
				}
			}
			if got := w.balance("app_1"); got != 105 {
				t.Fatalf("balance %d, want 105 (one opening and one purchase)", got)
			}
			if got := ledgerSums(w.f)["app_1"]; got != 105 {
				t.Fatalf("ledger sum %d, want the balance 105", got)
			}
			plan := row(11, 3, fsm.AppPlanChanges)
			plan.AccountID, plan.Plan = "app_1", fsm.PlanMax
			key := row(11, 4, fsm.AppKeys)
			key.AccountID, key.KeyID, key.KeyHash = "app_1", "appkey_1", keyHash("app secret")
			revoke := row(12, 5, fsm.AppKeyRevocations)
			revoke.KeyID = "appkey_1"
			for _, r := range []*fsm.AppRow{plan, key, revoke} {
				appRow(t, w, r)
			}
			if a, _ := w.f.Account("app_1"); a.Plan != fsm.PlanMax {
				t.Fatalf("plan %s, want max", a.Plan)
			}
			if k, ok := w.f.KeyByHash(keyHash("app secret")); !ok || k.RevokedAt == 0 || k.AccountID != "app_1" {
				t.Fatalf("key %+v (found %v), want app_1's key, revoked", k, ok)
			}
		})
	}
}

func TestAppRowRefusals(t *testing.T) {
	cases := []struct {
		name  string
		build func(r *fsm.AppRow)
	}{
		{"purchase for an unknown account", func(r *fsm.AppRow) { r.Table, r.AccountID, r.Credits = fsm.AppPurchases, "nobody", 5 }},
		{"negative purchase", func(r *fsm.AppRow) { r.Table, r.AccountID, r.Credits = fsm.AppPurchases, "a", -5 }},
		{"unknown plan", func(r *fsm.AppRow) { r.Table, r.AccountID, r.Plan = fsm.AppPlanChanges, "a", "gold" }},
		{"account that exists", func(r *fsm.AppRow) { r.Table, r.AccountID, r.Plan = fsm.AppAccounts, "a", fsm.PlanPro }},
		{"key id taken", func(r *fsm.AppRow) { r.Table, r.AccountID, r.KeyID = fsm.AppKeys, "a", "a-key0" }},
		{"revoke unknown key", func(r *fsm.AppRow) { r.Table, r.KeyID = fsm.AppKeyRevocations, "nokey" }},
		{"unknown table", func(r *fsm.AppRow) { r.Table = "coupons" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, appliers[1])
			w.account("a", fsm.PlanPro, 10)
			before := snapshotBytes(t, w.f)
			r := row(7, 1, "")
			tc.build(r)
			res := appRow(t, w, r)
			if res.Applied || res.Refusal == "" {
				t.Fatalf("%+v, want a refusal", res)
			}
			again := appRow(t, w, r)
			if !again.Duplicate || again.Refusal != res.Refusal {
				t.Fatalf("sent again: %+v, want the same refusal %q", again, res.Refusal)
			}
			// Only the mark and the refusal changed: nothing half-applied.
			if w.balance("a") != 10 {
				t.Fatalf("balance changed to %d", w.balance("a"))
			}
			next := row(7, 2, fsm.AppPurchases)
			next.AccountID, next.Credits = "a", 1
			if res := appRow(t, w, next); !res.Applied {
				t.Fatalf("the row behind a refused one: %+v", res)
			}
			w.must(&fsm.TrimExported{Inbound: r.Mark})
			if st := w.f.AppExport(); len(st.Refused) != 0 {
				t.Fatalf("refusals after trim: %+v", st.Refused)
			}
			if bytes.Equal(before, snapshotBytes(t, w.f)) {
				t.Fatal("snapshot did not change after rows were applied")
			}
		})
	}
}

func TestLedgerFollowsEveryMovement(t *testing.T) {
	w := newWorld(t, appliers[1])
	w.account("before", fsm.PlanPro, 40) // before export: an opening entry
	w.must(&fsm.SetAppExport{On: true, Now: t0})
	w.account("a", fsm.PlanPro, 100)
	w.must(&fsm.GrantCredits{AccountID: "a", Amount: 50, Now: t0})
	w.video("v1", "a", 30)
	w.video("v2", "a", 20)
	w.must(&fsm.FailVideo{VideoID: "v2", Reason: "operator", Now: t0})
	w.must(&fsm.DebitCredits{AccountID: "a", Amount: 7, Key: "render-1", Now: t0})
	sums := ledgerSums(w.f)
	for _, id := range []string{"a", "before"} {
		if sums[id] != w.balance(id) {
			t.Fatalf("%s: ledger sums to %d, balance is %d", id, sums[id], w.balance(id))
		}
	}
	kinds := map[string]int{}
	out := w.f.PendingExport(0, 1000)
	for _, e := range out.Ledger {
		kinds[e.Kind]++
	}
	want := map[string]int{fsm.LedgerOpening: 1, fsm.LedgerGrant: 2, fsm.LedgerCharge: 3, fsm.LedgerRefund: 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Fatalf("ledger kinds %v, want %v", kinds, want)
		}
	}
	statuses := map[string][]string{}
	for _, e := range out.Events {
		statuses[e.VideoID] = append(statuses[e.VideoID], e.Status)
	}
	if len(statuses["v2"]) != 2 || statuses["v2"][1] != fsm.StatusFailed {
		t.Fatalf("v2 events %v, want queued then failed", statuses["v2"])
	}
	// A restored replica holds the same outbox.
	if got := restored(t, snapshotBytes(t, w.f)).PendingExport(0, 1000); len(got.Ledger) != len(out.Ledger) || len(got.Events) != len(out.Events) {
		t.Fatalf("restored outbox %d/%d, want %d/%d", len(got.Ledger), len(got.Events), len(out.Ledger), len(out.Events))
	}
	last := out.Ledger[len(out.Ledger)-1].Index
	w.must(&fsm.TrimExported{Through: last - 1})
	if rest := w.f.PendingExport(0, 1000); len(rest.Ledger) != 1 || rest.Ledger[0].Index != last {
		t.Fatalf("after trim: %+v, want only the entry of index %d", rest.Ledger, last)
	}
	w.must(&fsm.SetAppExport{On: false})
	if rest := w.f.PendingExport(0, 1000); len(rest.Ledger)+len(rest.Events) != 0 || rest.On {
		t.Fatalf("export off still holds %+v", rest)
	}
	w.must(&fsm.GrantCredits{AccountID: "a", Amount: 1, Now: t0})
	if rest := w.f.PendingExport(0, 1000); len(rest.Ledger) != 0 {
		t.Fatal("export off still records movements")
	}
}

func TestDebitCredits(t *testing.T) {
	w := newWorld(t, appliers[1])
	w.account("a", fsm.PlanPro, 10)
	first := must(w, &fsm.DebitCredits{AccountID: "a", Amount: 4, Key: "k1", Now: t0})
	again := must(w, &fsm.DebitCredits{AccountID: "a", Amount: 4, Key: "k1", Now: t0 + 1})
	if first.Replayed || !again.Replayed || again.Balance != 6 || w.balance("a") != 6 {
		t.Fatalf("first %+v again %+v balance %d: want one debit of 4", first, again, w.balance("a"))
	}
	cases := []struct {
		name string
		cmd  *fsm.DebitCredits
		want error
	}{
		{"key reused for another amount", &fsm.DebitCredits{AccountID: "a", Amount: 5, Key: "k1"}, fsm.ErrDuplicateRequest},
		{"more than the balance", &fsm.DebitCredits{AccountID: "a", Amount: 7, Key: "k2"}, fsm.ErrInsufficientCredits},
		{"no key", &fsm.DebitCredits{AccountID: "a", Amount: 1}, fsm.ErrInvalidCommand},
		{"zero", &fsm.DebitCredits{AccountID: "a", Key: "k3"}, fsm.ErrInvalidCommand},
		{"unknown account", &fsm.DebitCredits{AccountID: "b", Amount: 1, Key: "k4"}, fsm.ErrAccountNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.apply(tc.cmd)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if w.balance("a") != 6 {
				t.Fatalf("a refused debit moved the balance to %d", w.balance("a"))
			}
		})
	}
	w.must(&fsm.ExpireIdempotency{Before: t0 + fsm.IdempotencyTTL})
	if res := must(w, &fsm.DebitCredits{AccountID: "a", Amount: 4, Key: "k1", Now: t0 + fsm.IdempotencyTTL}); res.Replayed {
		t.Fatal("an expired debit key was replayed")
	}
}

// TestPendingExportKeepsIndexesWhole: a batch limit never splits the entries of
// one log index, so the export cursor can stand on an index boundary.
func TestPendingExportKeepsIndexesWhole(t *testing.T) {
	w := newWorld(t, appliers[1])
	for _, id := range []string{"a", "b", "c", "d"} {
		w.account(id, fsm.PlanPro, 10)
	}
	w.must(&fsm.SetAppExport{On: true, Now: t0}) // four opening entries in one index
	opening := w.f.AppliedIndex()
	w.must(&fsm.GrantCredits{AccountID: "a", Amount: 1, Now: t0 + 5})
	cases := []struct {
		after        uint64
		limit        int
		wantN        int
		wantThrough  uint64
		wantPending  int
		wantOldestAt int64
	}{
		{0, 2, 4, opening, 5, t0},
		{0, 10, 5, opening + 1, 5, t0},
		{opening, 10, 1, opening + 1, 1, t0 + 5},
		{opening + 1, 10, 0, opening + 1, 0, 0},
	}
	for _, c := range cases {
		out := w.f.PendingExport(c.after, c.limit)
		if len(out.Ledger) != c.wantN || out.Through != c.wantThrough {
			t.Fatalf("PendingExport(%d, %d): %d entries through %d, want %d through %d", c.after, c.limit, len(out.Ledger), out.Through, c.wantN, c.wantThrough)
		}
		if n, at := w.f.ExportBacklog(c.after); n != c.wantPending || at != c.wantOldestAt {
			t.Fatalf("ExportBacklog(%d) = %d, %d; want %d, %d", c.after, n, at, c.wantPending, c.wantOldestAt)
		}
	}
}
