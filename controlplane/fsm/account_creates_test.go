package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// createOnce is the keyed creation of account id with API key keyID, the
// request standing for body.
func createOnce(key, body, id, keyID string, credits, now int64) *fsm.CreateAccountOnce {
	return &fsm.CreateAccountOnce{CreateAccount: fsm.CreateAccount{AccountID: id, Name: "name of " + id, Plan: fsm.PlanPro, Credits: credits,
		KeyID: keyID, KeyHash: keyHash("secret-" + keyID), KeyHint: "vf_live_" + keyID[:1], Now: now},
		Key: key, RequestHash: keyHash(body)}
}

// TestCreateAccountOnce: a keyed creation opens one account however often
// it is sent; a replay answers that account with the new key it carries
// and revokes the key the previous answer carried, so the account holds
// one live key from its creation; another request under the key is
// refused, naming the account; the key is forgotten with the idempotency
// records. Every way of applying agrees.
func TestCreateAccountOnce(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			live := func(keyID string) bool {
				t.Helper()
				k, ok := w.f.Key(keyID)
				if !ok {
					t.Fatalf("key %s does not exist", keyID)
				}
				return k.RevokedAt == 0
			}
			first := must(w, createOnce("signup-1", "body", "acct_1", "key_1", 40, t0))
			if first.Replayed || first.KeyID != "key_1" || first.Account.ID != "acct_1" || first.Account.Credits != 40 || !live("key_1") {
				t.Fatalf("first creation: %+v", first)
			}
			w.must(&fsm.GrantCredits{AccountID: "acct_1", Amount: 2, Now: t0 + 1})
			again := must(w, createOnce("signup-1", "body", "acct_2", "key_2", 40, t0+2))
			if !again.Replayed || again.Account.ID != "acct_1" || again.KeyID != "key_2" || again.Account.Credits != 42 {
				t.Fatalf("replay: %+v, want account acct_1 as it is now with key_2", again)
			}
			if _, ok := w.f.Account("acct_2"); ok {
				t.Fatal("a replay opened a second account")
			}
			if live("key_1") || !live("key_2") {
				t.Fatalf("after a replay key_1 live %v, key_2 live %v: want only the replay's key live", live("key_1"), live("key_2"))
			}
			if k, _ := w.f.KeyByHash(keyHash("secret-key_2")); k.AccountID != "acct_1" {
				t.Fatalf("the replay's key belongs to %q", k.AccountID)
			}
			// A key already revoked (an operator's) keeps its time.
			w.must(&fsm.RevokeKey{KeyID: "key_2", Now: t0 + 3})
			third := must(w, createOnce("signup-1", "body", "acct_3", "key_3", 40, t0+4))
			if k, _ := w.f.Key("key_2"); !third.Replayed || k.RevokedAt != t0+3 || live("key_1") || !live("key_3") {
				t.Fatalf("second replay: %+v, key_2 %+v", third, k)
			}
			if other := must(w, createOnce("signup-2", "body", "acct_4", "key_4", 40, t0)); other.Replayed || other.Account.ID != "acct_4" {
				t.Fatalf("another key: %+v", other)
			}
			if st := w.f.Stats(); st.Accounts != 2 || st.Keys != 4 {
				t.Fatalf("%d accounts and %d keys, want 2 and 4", st.Accounts, st.Keys)
			}
			for _, tc := range []struct {
				name string
				cmd  *fsm.CreateAccountOnce
				want error
			}{
				{"key reused for another request", createOnce("signup-1", "other body", "acct_5", "key_5", 40, t0+5), fsm.ErrDuplicateRequest},
				{"no key", createOnce("", "body", "acct_5", "key_5", 40, t0+5), fsm.ErrInvalidCommand},
				{"a key too long", createOnce(strings.Repeat("k", fsm.MaxDebitKey+1), "body", "acct_5", "key_5", 40, t0+5), fsm.ErrInvalidCommand},
				{"negative credits", createOnce("signup-3", "body", "acct_5", "key_5", -1, t0+5), fsm.ErrInvalidCommand},
				{"above the ceiling", createOnce("signup-3", "body", "acct_5", "key_5", fsm.MaxCredits+1, t0+5), fsm.ErrCreditCeiling},
				{"a replay whose key hash is taken", func() *fsm.CreateAccountOnce {
					c := createOnce("signup-1", "body", "acct_5", "key_5", 40, t0+5)
					c.KeyHash = keyHash("secret-key_4")
					return c
				}(), fsm.ErrInvalidCommand},
			} {
				if _, err := w.apply(tc.cmd); !errors.Is(err, tc.want) {
					t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
				}
				if st := w.f.Stats(); st.Accounts != 2 || st.Keys != 4 || !live("key_3") {
					t.Fatalf("%s: a refused creation changed the state: %d accounts, %d keys, key_3 live %v", tc.name, st.Accounts, st.Keys, live("key_3"))
				}
			}
			if _, err := w.apply(createOnce("signup-1", "other body", "acct_5", "key_5", 40, t0+5)); err == nil || !strings.Contains(err.Error(), "acct_1") {
				t.Errorf("the refusal of another request does not name the account the key created: %v", err)
			}
			// The key is forgotten 24 h after the creation, replays or not.
			w.must(&fsm.ExpireIdempotency{Before: t0 + fsm.IdempotencyTTL})
			if res := must(w, createOnce("signup-1", "body", "acct_6", "key_6", 40, t0+fsm.IdempotencyTTL)); res.Replayed || res.Account.ID != "acct_6" || !live("key_3") {
				t.Fatalf("an expired key was replayed: %+v", res)
			}
			// Expired and made anew, the key replays again.
			if res := must(w, createOnce("signup-1", "body", "acct_7", "key_7", 40, t0+fsm.IdempotencyTTL+1)); !res.Replayed || res.Account.ID != "acct_6" || live("key_6") || !live("key_7") {
				t.Fatalf("the key made anew: %+v", res)
			}
		})
	}
}
