package fsm

import "fmt"

// Keyed grants (GrantCreditsOnce). The service's app gives an account its
// credits through the admin API (admin.grantCredits) when it does not use
// the app-database bridge, and a grant whose answer was lost (a timeout, a
// leader change) must be safe to send again: sent twice, a plain
// GrantCredits gives the credits twice. A grant with a key is remembered,
// per account and key, for IdempotencyTTL like a debit (DebitCredits), in
// a table of its own, so that the app may use one key for a grant and a
// debit of the same purchase.

// bucketHotGrants is the state file's bucket of keyed grants (hot.go).
const bucketHotGrants = "hot_grants" // account, 0, key → msgpack keyed grant

// recGrant is a keyed grant in a snapshot.
const recGrant recordType = 30

// GrantCreditsOnce adds credits to an account once per key: the same key
// and amount again answers the first grant and adds nothing; the same key
// with another amount is ErrDuplicateRequest. Key is 1–MaxDebitKey bytes.
type GrantCreditsOnce struct {
	AccountID string `msgpack:"account"`
	Amount    int64  `msgpack:"amount"`
	Key       string `msgpack:"key"`
	Now       int64  `msgpack:"now"`
}

// Type implements Command.
func (GrantCreditsOnce) Type() MessageType { return GrantCreditsOnceType }

// KeyedGrant is a grant remembered by its key.
type KeyedGrant struct {
	AccountID string `msgpack:"account"`
	Key       string `msgpack:"key"`
	Amount    int64  `msgpack:"amount"`
	Balance   int64  `msgpack:"balance"` // right after the grant
	CreatedAt int64  `msgpack:"created_at"`
}

// GrantResult answers GrantCreditsOnce: the account as it is now and the
// grant the key stands for; Replayed is true when the key was seen before
// (nothing was added this time).
type GrantResult struct {
	Account  Account
	Grant    KeyedGrant
	Replayed bool
}

func (s *state) applyGrantCreditsOnce(c *GrantCreditsOnce) (GrantResult, error) {
	a, ok := s.accounts[c.AccountID]
	if !ok {
		return GrantResult{}, fmt.Errorf("grant to %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if c.Amount <= 0 || c.Key == "" || len(c.Key) > MaxDebitKey {
		return GrantResult{}, fmt.Errorf("%w: a keyed grant needs a positive amount and a key of 1-%d characters", ErrInvalidCommand, MaxDebitKey)
	}
	k := idemID(c.AccountID, c.Key)
	if g, ok := s.grants.get(k); ok {
		if g.Amount != c.Amount {
			return GrantResult{}, fmt.Errorf("%w: grant key %q was used for %d credits, not %d", ErrDuplicateRequest, c.Key, g.Amount, c.Amount)
		}
		return GrantResult{Account: *a, Grant: *g, Replayed: true}, nil
	}
	acct, err := s.applyGrantCredits(&GrantCredits{AccountID: c.AccountID, Amount: c.Amount, Now: c.Now})
	if err != nil {
		return GrantResult{}, err
	}
	g := &KeyedGrant{AccountID: c.AccountID, Key: c.Key, Amount: c.Amount, Balance: acct.Credits, CreatedAt: c.Now}
	s.grants.put(k, g)
	return GrantResult{Account: acct, Grant: *g}, nil
}

// grantRecords copies the keyed grants by account and key (unless
// hotOnly: a checkpoint writes them one per key), so replicas write the
// same bytes; none, when there are none, so a state without keyed grants
// snapshots as it did before them.
func (s *state) grantRecords(hotOnly bool) []record {
	if hotOnly {
		return nil
	}
	return []record{{recTable, s.grants.snapshot(recGrant, "")}}
}

func (s *state) restoreGrant(body []byte) error {
	g, err := decodeRecord[KeyedGrant](body, "keyed grant")
	s.grants.restore(idemID(g.AccountID, g.Key), &g)
	return err
}
