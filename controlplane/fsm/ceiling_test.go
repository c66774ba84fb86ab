package fsm_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// ceilingCase is one command applied to a world with export on and "pro" (pro,
// 100 credits). A refused command must leave "pro"'s balance at balance, add no
// ledger entry, and open no account.
type ceilingCase struct {
	name  string
	setup func(w *world)
	cmd   fsm.Command
	// err is the refusal Apply returns; refusal is a part of the reason an app
	// row is refused with. Neither: the command applies.
	err     error
	refusal string
	// message is the whole refusal text, where the case pins it.
	message string
	// balance is "pro"'s balance afterwards.
	balance int64
	// absent is an account the command must not have opened.
	absent string
}

func grant(account string, amount int64) *fsm.GrantCredits {
	return &fsm.GrantCredits{AccountID: account, Amount: amount, Now: t0}
}

func opening(id string, credits int64) *fsm.CreateAccount {
	return &fsm.CreateAccount{AccountID: id, Plan: fsm.PlanPro, Credits: credits, KeyID: id + "-key", KeyHash: keyHash(id), Now: t0}
}

func appRows(r *fsm.AppRow) *fsm.AppRows { return &fsm.AppRows{Rows: []fsm.AppRow{*r}} }

func purchase(id, account string, credits int64) *fsm.AppRows {
	r := row(20, 1, fsm.AppPurchases)
	r.PurchaseID, r.AccountID, r.Credits = id, account, credits
	return appRows(r)
}

func appAccount(id string, credits int64) *fsm.AppRows {
	r := row(20, 1, fsm.AppAccounts)
	r.AccountID, r.Plan, r.Credits = id, fsm.PlanPro, credits
	return appRows(r)
}

func TestCreditCeiling(t *testing.T) {
	const c = fsm.MaxCredits
	held60 := func(w *world) { w.video("v1", "pro", 60) } // 40 left, 60 held until the video ends
	cases := []ceilingCase{
		{name: "grant up to the ceiling", cmd: grant("pro", c-100), balance: c},
		{name: "grant one past the ceiling", cmd: grant("pro", c-99), err: fsm.ErrCreditCeiling, balance: 100,
			message: "grant of 999999999999901 credits would raise the balance of pro to 1000000000000001, above the ceiling of 1000000000000000 credits"},
		{name: "grant at the ceiling", setup: func(w *world) { w.must(grant("pro", c-100)) }, cmd: grant("pro", 1),
			err: fsm.ErrCreditCeiling, balance: c},
		{name: "grant that would wrap int64", cmd: grant("pro", math.MaxInt64), err: fsm.ErrCreditCeiling, balance: 100,
			message: "grant of 9223372036854775807 credits would raise the balance of pro to 9223372036854775907, above the ceiling of 1000000000000000 credits"},
		{name: "grant above the ceiling on its own", cmd: grant("pro", c+1), err: fsm.ErrCreditCeiling, balance: 100},
		{name: "negative grant", cmd: grant("pro", -1), err: fsm.ErrInvalidCommand, balance: 100},
		{name: "grant that wraps to negative", cmd: grant("pro", math.MinInt64), err: fsm.ErrInvalidCommand, balance: 100},
		{name: "grant counts what unfinished videos hold", setup: held60, cmd: grant("pro", c-99), err: fsm.ErrCreditCeiling, balance: 40,
			message: "grant of 999999999999901 credits would raise the balance of pro to 1000000000000001 (counting 60 credits its unfinished videos hold, which a failure refunds), above the ceiling of 1000000000000000 credits"},
		{name: "grant up to the ceiling with a video held", setup: held60, cmd: grant("pro", c-100), balance: c - 60},
		{name: "opening balance at the ceiling", cmd: opening("big", c), balance: 100},
		{name: "opening balance past the ceiling", cmd: opening("big", c+1), err: fsm.ErrCreditCeiling, balance: 100, absent: "big",
			message: "opening balance of 1000000000000001 credits would raise the balance of big to 1000000000000001, above the ceiling of 1000000000000000 credits"},
		{name: "opening balance that would wrap int64", cmd: opening("big", math.MaxInt64), err: fsm.ErrCreditCeiling, balance: 100, absent: "big"},
		{name: "app purchase up to the ceiling", cmd: purchase("pur_fill", "pro", c-100), balance: c},
		{name: "app purchase that would wrap int64", cmd: purchase("pur_huge", "pro", math.MaxInt64), balance: 100,
			refusal: "purchase pur_huge of 9223372036854775807 credits would raise the balance of pro to 9223372036854775907, above the ceiling"},
		{name: "app purchase counts what unfinished videos hold", setup: held60, cmd: purchase("pur_over", "pro", c-99), balance: 40,
			refusal: "above the ceiling of 1000000000000000 credits"},
		{name: "app account past the ceiling", cmd: appAccount("app_big", c+1), balance: 100, absent: "app_big",
			refusal: "opening balance of 1000000000000001 credits would raise the balance of app_big"},
		{name: "app account at the ceiling", cmd: appAccount("app_big", c), balance: 100},
		{name: "debit that would wrap int64", cmd: &fsm.DebitCredits{AccountID: "pro", Amount: math.MaxInt64, Key: "d1", Now: t0},
			err: fsm.ErrInsufficientCredits, balance: 100},
		{name: "negative debit", cmd: &fsm.DebitCredits{AccountID: "pro", Amount: -5, Key: "d1", Now: t0}, err: fsm.ErrInvalidCommand, balance: 100},
		{name: "video priced past any balance", cmd: createVideo("v9", "pro", math.MaxInt64, "", "", t0), err: fsm.ErrInsufficientCredits, balance: 100},
		{name: "negative video price", cmd: createVideo("v9", "pro", -5, "", "", t0), err: fsm.ErrInvalidCommand, balance: 100},
	}
	for _, a := range appliers {
		for _, tc := range cases {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, a)
				w.must(&fsm.SetAppExport{On: true, Now: t0})
				w.account("pro", fsm.PlanPro, 100)
				if tc.setup != nil {
					tc.setup(w)
				}
				ledger := len(w.f.PendingExport(0, 1<<30).Ledger)
				v, err := w.apply(tc.cmd)
				wantErr(t, err, tc.err)
				refused := tc.err != nil || tc.refusal != ""
				if rows, ok := v.([]fsm.AppRowResult); ok {
					if got := rows[0]; tc.refusal == "" && !got.Applied || tc.refusal != "" && (got.Applied || !strings.Contains(got.Refusal, tc.refusal)) {
						t.Fatalf("app row: %+v, want refusal %q", got, tc.refusal)
					}
					if st := w.f.AppExport(); st.Inbound != tc.cmd.(*fsm.AppRows).Rows[0].Mark {
						t.Fatalf("inbound mark %+v: the row was not consumed", st.Inbound)
					}
				}
				if tc.message != "" && (err == nil || err.Error() != tc.message) {
					t.Fatalf("refusal %q, want %q", err, tc.message)
				}
				if got := w.balance("pro"); got != tc.balance {
					t.Fatalf("balance of pro %d, want %d", got, tc.balance)
				}
				if tc.absent != "" {
					if _, ok := w.f.Account(tc.absent); ok {
						t.Fatalf("a refused opening balance opened %s", tc.absent)
					}
				}
				after := w.f.PendingExport(0, 1<<30).Ledger
				if refused && len(after) != ledger {
					t.Fatalf("a refused command wrote the ledger: %+v", after[ledger:])
				}
				for id, sum := range ledgerSums(w.f) {
					if got, _ := w.f.Account(id); sum != got.Credits || got.Credits < 0 || got.Credits > c {
						t.Fatalf("account %s: balance %d, ledger sum %d", id, got.Credits, sum)
					}
				}
			})
		}
	}
}

// TestRefundUnderTheCeiling fills an account to the ceiling while a video holds
// credits, then fails the video: the refund brings it to the ceiling exactly.
func TestRefundUnderTheCeiling(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("pro", fsm.PlanPro, 100)
			w.video("v1", "pro", 60)
			w.must(grant("pro", fsm.MaxCredits-100))
			if _, err := w.apply(grant("pro", 1)); !errors.Is(err, fsm.ErrCreditCeiling) {
				t.Fatalf("grant past the ceiling with a video held: %v", err)
			}
			w.must(&fsm.FailVideo{VideoID: "v1", Reason: "cancelled", Now: t0 + 1})
			if got := w.balance("pro"); got != fsm.MaxCredits {
				t.Fatalf("balance after the refund %d, want the ceiling %d", got, fsm.MaxCredits)
			}
			// The video no longer holds anything: the ceiling is reached, not passed.
			if _, err := w.apply(grant("pro", 1)); !errors.Is(err, fsm.ErrCreditCeiling) {
				t.Fatalf("grant at the ceiling: %v", err)
			}
		})
	}
}

func TestCreditCeilingErrorDetails(t *testing.T) {
	w := newWorld(t, appliers[0])
	w.account("pro", fsm.PlanPro, 100)
	w.video("v1", "pro", 60)
	_, err := w.apply(grant("pro", math.MaxInt64))
	var ce *fsm.CreditCeilingError
	if !errors.As(err, &ce) {
		t.Fatalf("refusal %v, want a *CreditCeilingError", err)
	}
	want := fsm.CreditCeilingError{What: "grant", AccountID: "pro", Amount: math.MaxInt64, Balance: 40, Held: 60}
	if *ce != want || ce.After().String() != "9223372036854775907" {
		t.Fatalf("refusal %+v (after %s), want %+v", *ce, ce.After(), want)
	}
}
