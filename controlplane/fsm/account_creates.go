package fsm

import "fmt"

// Keyed account creation (CreateAccountOnce). The service's app opens a
// customer's account through the admin API (admin.createAccount) when the
// customer signs up, and a creation whose answer was lost (a timeout, a
// leader change) must be safe to send again: sent twice, a plain
// CreateAccount opens two accounts. A creation with a key is remembered by
// its key for IdempotencyTTL, as a keyed grant is (grants.go), in a table
// of its own.
//
// A replay cannot answer the first answer's API key: the state keeps only
// key hashes, and a secret must not be stored in the log or the state to
// be shown again. So a replay gives the account a new key, which the
// leader made for that request, and revokes the one the lost answer
// carried: whichever answer the app finally receives holds the account's
// only live key from its creation.

// bucketHotAccountCreates is the state file's bucket of keyed account
// creations (hot.go).
const bucketHotAccountCreates = "hot_account_creates" // 0, key → msgpack keyed account creation

// recAccountCreate is a keyed account creation in a snapshot.
const recAccountCreate recordType = 31

// CreateAccountOnce is CreateAccount once per key: the first opens the
// account with its key; the same key and request hash again gives that
// account a new key (KeyID, KeyHash, KeyHint) and revokes the one the
// previous answer carried; the same key with another request hash is
// ErrDuplicateRequest. Key is 1–MaxDebitKey bytes. RequestHash stands for
// the request's name, plan and credits (the admin API's hash of them), so
// that the state can tell a retry from another request under the same key
// without keeping the request.
type CreateAccountOnce struct {
	CreateAccount          // its fields inlined in the encoding
	Key           string   `msgpack:"idempotency_key"`
	RequestHash   [32]byte `msgpack:"request_hash"`
}

// Type implements Command.
func (CreateAccountOnce) Type() MessageType { return CreateAccountOnceType }

// KeyedAccountCreate is an account creation remembered by its key.
type KeyedAccountCreate struct {
	Key         string   `msgpack:"key"`
	RequestHash [32]byte `msgpack:"request_hash"`
	AccountID   string   `msgpack:"account"`
	// KeyID is the API key the latest answer carried: the one a replay
	// revokes.
	KeyID     string `msgpack:"key_id"`
	CreatedAt int64  `msgpack:"created_at"`
}

// CreateAccountResult answers CreateAccountOnce: the account as it is now
// and the API key this answer carries (the command's KeyID); Replayed is
// true when the key was seen before (no account was opened this time).
type CreateAccountResult struct {
	Account  Account
	KeyID    string
	Replayed bool
}

// accountCreateID keys a keyed account creation in its table. The key is
// global (there is no account yet); it takes the empty account's place in
// idemID's "account, 0, key", which no account id can fill.
func accountCreateID(key string) string { return idemID("", key) }

func (s *state) applyCreateAccountOnce(c *CreateAccountOnce) (CreateAccountResult, error) {
	if c.Key == "" || len(c.Key) > MaxDebitKey {
		return CreateAccountResult{}, fmt.Errorf("%w: a keyed account creation needs a key of 1-%d characters", ErrInvalidCommand, MaxDebitKey)
	}
	k := accountCreateID(c.Key)
	rec, seen := s.accountCreates.get(k)
	if !seen {
		a, err := s.applyCreateAccount(&c.CreateAccount)
		if err != nil {
			return CreateAccountResult{}, err
		}
		s.accountCreates.set(k, &KeyedAccountCreate{Key: c.Key, RequestHash: c.RequestHash, AccountID: a.ID, KeyID: c.KeyID, CreatedAt: c.Now}, false)
		return CreateAccountResult{Account: a, KeyID: c.KeyID}, nil
	}
	if rec.RequestHash != c.RequestHash {
		return CreateAccountResult{}, fmt.Errorf("%w: idempotency key %q created account %s from another name, plan or credits",
			ErrDuplicateRequest, c.Key, rec.AccountID)
	}
	a, ok := s.accounts[rec.AccountID]
	if !ok { // accounts are never forgotten; refused rather than half-applied all the same
		return CreateAccountResult{}, fmt.Errorf("replay of account creation %q: %s: %w", c.Key, rec.AccountID, ErrAccountNotFound)
	}
	// Looked up before the new key is added: from here on nothing may refuse.
	old, hasOld := s.keys[rec.KeyID]
	if _, err := s.applyCreateKey(&CreateKey{AccountID: a.ID, KeyID: c.KeyID, KeyHash: c.KeyHash, KeyHint: c.KeyHint, Now: c.Now}); err != nil {
		return CreateAccountResult{}, err
	}
	if hasOld {
		revoke(old, c.Now)
	}
	next := *rec
	next.KeyID = c.KeyID
	s.accountCreates.set(k, &next, true)
	return CreateAccountResult{Account: *a, KeyID: c.KeyID, Replayed: true}, nil
}

// accountCreateRecords copies the keyed account creations by key (unless
// hotOnly: a checkpoint writes them one per key), so replicas write the
// same bytes; none, when there are none, so a state without them
// snapshots as it did before them.
func (s *state) accountCreateRecords(hotOnly bool) []record {
	if hotOnly {
		return nil
	}
	return []record{{recTable, s.accountCreates.snapshot(recAccountCreate, "")}}
}

func (s *state) restoreAccountCreate(body []byte) error {
	r, err := decodeRecord[KeyedAccountCreate](body, "keyed account creation")
	if err != nil {
		return err
	}
	s.accountCreates.restore(accountCreateID(r.Key), &r)
	return nil
}
