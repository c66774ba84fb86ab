package fsm_test

import (
	"errors"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestGrantCreditsOnce: a keyed grant adds its credits once; the same key
// and amount again answers the first grant, another amount is refused, and
// the key is forgotten with the idempotency records. A debit may use the
// same key. Every way of applying agrees.
func TestGrantCreditsOnce(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("a", fsm.PlanPro, 10)
			w.account("b", fsm.PlanPro, 10)
			first := must(w, &fsm.GrantCreditsOnce{AccountID: "a", Amount: 5, Key: "purchase-1", Now: t0})
			again := must(w, &fsm.GrantCreditsOnce{AccountID: "a", Amount: 5, Key: "purchase-1", Now: t0 + 1})
			if first.Replayed || !again.Replayed || first.Grant.Balance != 15 || again.Grant != first.Grant || w.balance("a") != 15 {
				t.Fatalf("first %+v, again %+v, balance %d: want one grant of 5", first, again, w.balance("a"))
			}
			if other := must(w, &fsm.GrantCreditsOnce{AccountID: "b", Amount: 7, Key: "purchase-1", Now: t0}); other.Replayed || w.balance("b") != 17 {
				t.Fatalf("another account's grant with the same key: %+v, balance %d", other, w.balance("b"))
			}
			if d := must(w, &fsm.DebitCredits{AccountID: "a", Amount: 2, Key: "purchase-1", Now: t0}); d.Replayed || w.balance("a") != 13 {
				t.Fatalf("a debit with the grant's key: %+v, balance %d", d, w.balance("a"))
			}
			for _, tc := range []struct {
				name string
				cmd  *fsm.GrantCreditsOnce
				want error
			}{
				{"key reused for another amount", &fsm.GrantCreditsOnce{AccountID: "a", Amount: 6, Key: "purchase-1"}, fsm.ErrDuplicateRequest},
				{"no key", &fsm.GrantCreditsOnce{AccountID: "a", Amount: 1}, fsm.ErrInvalidCommand},
				{"zero", &fsm.GrantCreditsOnce{AccountID: "a", Key: "k"}, fsm.ErrInvalidCommand},
				{"above the ceiling", &fsm.GrantCreditsOnce{AccountID: "a", Amount: fsm.MaxCredits, Key: "k"}, fsm.ErrCreditCeiling},
				{"unknown account", &fsm.GrantCreditsOnce{AccountID: "c", Amount: 1, Key: "k"}, fsm.ErrAccountNotFound},
			} {
				if _, err := w.apply(tc.cmd); !errors.Is(err, tc.want) {
					t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
				}
				if w.balance("a") != 13 {
					t.Fatalf("%s: a refused grant moved the balance to %d", tc.name, w.balance("a"))
				}
			}
			w.must(&fsm.ExpireIdempotency{Before: t0 + fsm.IdempotencyTTL})
			if res := must(w, &fsm.GrantCreditsOnce{AccountID: "a", Amount: 5, Key: "purchase-1", Now: t0 + fsm.IdempotencyTTL}); res.Replayed || w.balance("a") != 18 {
				t.Fatalf("an expired grant key was replayed: %+v, balance %d", res, w.balance("a"))
			}
		})
	}
}
