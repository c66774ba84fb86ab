package appdb

import (
	"fmt"
	"math"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// refusedRow is an inbound row the bridge must quarantine with reason.
type refusedRow struct {
	name, sql, reason string
	purchase          string // the purchase id that must not reach the ledger
	account           string // the account that must not be opened
}

// TestCreditsPastTheCeilingQuarantined is issue 17 through the bridge: purchases
// and opening balances that would raise a balance past fsm.MaxCredits (or wrap
// int64) are quarantined with their reason and never applied, neither in the FSM
// nor in vidfarm_ledger and vidfarm_balances; a purchase up to the ceiling behind
// them is.
func TestCreditsPastTheCeilingQuarantined(t *testing.T) {
	r := newRig(t)
	f, b, pool := r.fsm, r.b, r.pool
	const c = fsm.MaxCredits
	mustExec(t, pool, `INSERT INTO vidfarm_app_accounts (account_id, plan, credits) VALUES ('app_c', 'pro', 10)`)
	stepUntilIdle(t, b)
	bad := []refusedRow{
		{name: "purchase that would wrap int64",
			sql:      fmt.Sprintf(`INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_huge', 'app_c', %d)`, int64(math.MaxInt64)),
			reason:   fmt.Sprintf("credits must be a positive number, at most %d (the ceiling of credits an account may hold), got %d", c, int64(math.MaxInt64)),
			purchase: "p_huge"},
		{name: "purchase past the ceiling",
			sql:      fmt.Sprintf(`INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_over', 'app_c', %d)`, c),
			reason:   fmt.Sprintf("purchase p_over of %d credits would raise the balance of app_c to %d, above the ceiling of %d credits", c, c+10, c),
			purchase: "p_over"},
		{name: "opening balance past the ceiling",
			sql:     fmt.Sprintf(`INSERT INTO vidfarm_app_accounts (account_id, plan, credits) VALUES ('app_big', 'pro', %d)`, c+1),
			reason:  fmt.Sprintf("credits must be 0 to %d (the ceiling of credits an account may hold), got %d", c, c+1),
			account: "app_big"},
		{name: "opening balance that would wrap int64",
			sql:     fmt.Sprintf(`INSERT INTO vidfarm_app_accounts (account_id, plan, credits) VALUES ('app_wrap', 'pro', %d)`, int64(math.MaxInt64)),
			reason:  fmt.Sprintf("credits must be 0 to %d (the ceiling of credits an account may hold), got %d", c, int64(math.MaxInt64)),
			account: "app_wrap"},
	}
	for _, row := range bad {
		mustExec(t, pool, row.sql)
	}
	// Up to the ceiling exactly is applied; one more credit after it is not.
	mustExec(t, pool, `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_fill', 'app_c', $1)`, c-10)
	mustExec(t, pool, `INSERT INTO vidfarm_app_purchases (purchase_id, account_id, credits) VALUES ('p_one', 'app_c', 1)`)
	bad = append(bad, refusedRow{name: "one credit at the ceiling", reason: fmt.Sprintf("purchase p_one of 1 credits would raise the balance of app_c to %d, above the ceiling", c+1), purchase: "p_one"})
	stepUntilIdle(t, b)

	if a, _ := f.Account("app_c"); a.Credits != c {
		t.Fatalf("FSM balance %d, want the ceiling %d: the opening 10 and p_fill only", a.Credits, c)
	}
	if got := count(t, pool, `SELECT credits FROM vidfarm_balances WHERE account_id = 'app_c'`); got != c {
		t.Fatalf("exported balance %d, want %d", got, c)
	}
	if got := count(t, pool, `SELECT sum(amount)::bigint FROM vidfarm_ledger WHERE account_id = 'app_c'`); got != c {
		t.Fatalf("ledger sum %d, want %d", got, c)
	}
	if got := count(t, pool, `SELECT count(*) FROM vidfarm_ledger WHERE ref = 'p_fill'`); got != 1 {
		t.Fatalf("%d ledger rows for p_fill, want 1", got)
	}
	for _, row := range bad {
		t.Run(row.name, func(t *testing.T) {
			if n := count(t, pool, `SELECT count(*) FROM vidfarm_inbound_quarantine WHERE position($1 in reason) > 0`, row.reason); n != 1 {
				t.Fatalf("%d quarantined rows say %q, want 1", n, row.reason)
			}
			if row.purchase != "" {
				if n := count(t, pool, `SELECT count(*) FROM vidfarm_ledger WHERE ref = $1`, row.purchase); n != 0 {
					t.Fatalf("%d ledger rows for the refused purchase %s", n, row.purchase)
				}
				if n := count(t, pool, `SELECT count(*) FROM vidfarm_inbound_quarantine WHERE row_data->>'purchase_id' = $1`, row.purchase); n != 1 {
					t.Fatalf("the quarantine holds %d rows of purchase %s, want 1", n, row.purchase)
				}
			}
			if row.account != "" {
				if _, ok := f.Account(row.account); ok {
					t.Fatalf("the FSM opened %s", row.account)
				}
				if n := count(t, pool, `SELECT count(*) FROM vidfarm_ledger WHERE account_id = $1`, row.account) +
					count(t, pool, `SELECT count(*) FROM vidfarm_balances WHERE account_id = $1`, row.account); n != 0 {
					t.Fatalf("%s reached the ledger or the balances", row.account)
				}
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
