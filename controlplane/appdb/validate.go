package appdb

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// Limits on the app's values, so nothing unbounded reaches the FSM.
const (
	maxID   = 128
	maxName = 200
	maxHint = 64
)

var errMalformed = errors.New("malformed app row")

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// need checks a required text column.
func need(col string, p *string, limit int) error {
	if p == nil || *p == "" || len(*p) > limit {
		return fmt.Errorf("%w: %s is required, at most %d bytes", errMalformed, col, limit)
	}
	return nil
}

// toAppRow checks a row's shape and turns it into the FSM's row. What depends on
// state (does the account exist?) is the FSM's to refuse.
func toAppRow(r inRow, now int64) (fsm.AppRow, error) {
	out := fsm.AppRow{Mark: r.mark(), Table: r.Kind, AccountID: str(r.AccountID), Name: str(r.Name), Plan: str(r.Plan),
		PurchaseID: str(r.PurchaseID), KeyID: str(r.KeyID), KeyHint: str(r.KeyHint), Now: now}
	if r.Credits != nil {
		out.Credits = *r.Credits
	}
	var errs []error
	switch r.Kind {
	case fsm.AppAccounts:
		errs = append(errs, need("account_id", r.AccountID, maxID), plan(r.Plan))
		if r.Name != nil && len(*r.Name) > maxName {
			errs = append(errs, fmt.Errorf("%w: name is longer than %d bytes", errMalformed, maxName))
		}
		if out.Credits < 0 || out.Credits > fsm.MaxCredits {
			errs = append(errs, fmt.Errorf("%w: credits must be 0 to %d (the ceiling of credits an account may hold), got %d", errMalformed, fsm.MaxCredits, out.Credits))
		}
	case fsm.AppPurchases:
		errs = append(errs, need("purchase_id", r.PurchaseID, maxID), need("account_id", r.AccountID, maxID))
		if r.Credits == nil || *r.Credits <= 0 || *r.Credits > fsm.MaxCredits {
			errs = append(errs, fmt.Errorf("%w: credits must be a positive number, at most %d (the ceiling of credits an account may hold), got %s",
				errMalformed, fsm.MaxCredits, credits(r.Credits)))
		}
	case fsm.AppPlanChanges:
		errs = append(errs, need("account_id", r.AccountID, maxID), plan(r.Plan))
	case fsm.AppKeys:
		errs = append(errs, need("key_id", r.KeyID, maxID), need("account_id", r.AccountID, maxID))
		if len(r.KeyHash) != len(out.KeyHash) {
			errs = append(errs, fmt.Errorf("%w: key_hash must be the 32-byte SHA-256 of the key, got %d bytes", errMalformed, len(r.KeyHash)))
		}
		copy(out.KeyHash[:], r.KeyHash)
		if len(out.KeyHint) > maxHint {
			errs = append(errs, fmt.Errorf("%w: key_hint is longer than %d bytes", errMalformed, maxHint))
		}
	case fsm.AppKeyRevocations:
		errs = append(errs, need("key_id", r.KeyID, maxID))
	default:
		errs = append(errs, fmt.Errorf("%w: unknown table %q", errMalformed, r.Kind))
	}
	return out, errors.Join(errs...)
}

func credits(p *int64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatInt(*p, 10)
}

func plan(p *string) error {
	if p == nil || !fsm.ValidPlan(*p) {
		return fmt.Errorf("%w: plan must be free, pro or max, got %q", errMalformed, str(p))
	}
	return nil
}
