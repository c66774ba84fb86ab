package fsm

import "fmt"

func (s *state) applyCreateAccount(c *CreateAccount) (Account, error) {
	if !ValidPlan(c.Plan) {
		return Account{}, fmt.Errorf("%w: unknown plan %q", ErrInvalidCommand, c.Plan)
	}
	if c.Credits < 0 {
		return Account{}, fmt.Errorf("%w: negative opening balance", ErrInvalidCommand)
	}
	if _, ok := s.accounts[c.AccountID]; ok {
		return Account{}, fmt.Errorf("%w: account %s exists", ErrInvalidCommand, c.AccountID)
	}
	if err := s.checkCredit("opening balance", c.AccountID, nil, c.Credits); err != nil {
		return Account{}, err
	}
	a := s.openAccount(c.AccountID, c.Name, c.Plan, c.Credits, c.Now)
	s.addKey(c.KeyID, c.AccountID, c.KeyHash, c.KeyHint, c.Now)
	return *a, nil
}

func (s *state) addKey(id, account string, hash [32]byte, hint string, now int64) *Key {
	k := &Key{ID: id, AccountID: account, Hash: hash, Hint: hint, CreatedAt: now}
	s.keys[id] = k
	s.keyByHash[hash] = id
	return k
}

func (s *state) applyCreateKey(c *CreateKey) (Key, error) {
	if _, ok := s.accounts[c.AccountID]; !ok {
		return Key{}, fmt.Errorf("create key for %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if _, ok := s.keyByHash[c.KeyHash]; ok {
		return Key{}, fmt.Errorf("%w: key hash collision", ErrInvalidCommand)
	}
	return *s.addKey(c.KeyID, c.AccountID, c.KeyHash, c.KeyHint, c.Now), nil
}

func (s *state) applyRevokeKey(c *RevokeKey) (Key, error) {
	k, ok := s.keys[c.KeyID]
	if !ok {
		return Key{}, fmt.Errorf("revoke %s: %w", c.KeyID, ErrKeyNotFound)
	}
	revoke(k, c.Now)
	return *k, nil
}

// revoke revokes k at now; revoking twice keeps the first time.
func revoke(k *Key, now int64) {
	if k.RevokedAt == 0 {
		k.RevokedAt = now
	}
}

func (s *state) applyGrantCredits(c *GrantCredits) (Account, error) {
	a, ok := s.accounts[c.AccountID]
	if !ok {
		return Account{}, fmt.Errorf("grant to %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if c.Amount <= 0 {
		return Account{}, fmt.Errorf("%w: grant must be positive, got %d", ErrInvalidCommand, c.Amount)
	}
	if err := s.checkCredit("grant", a.ID, a, c.Amount); err != nil {
		return Account{}, err
	}
	s.move(a, LedgerGrant, c.Amount, "", "", c.Now)
	return *a, nil
}

func (s *state) applySetPlan(c *SetPlan) (Account, error) {
	a, ok := s.accounts[c.AccountID]
	if !ok {
		return Account{}, fmt.Errorf("set plan of %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if !ValidPlan(c.Plan) {
		return Account{}, fmt.Errorf("%w: unknown plan %q", ErrInvalidCommand, c.Plan)
	}
	a.Plan = c.Plan
	return *a, nil
}

func (s *state) applyCreateFolder(c *CreateFolder) (Folder, error) {
	if _, ok := s.accounts[c.AccountID]; !ok {
		return Folder{}, fmt.Errorf("create folder for %s: %w", c.AccountID, ErrAccountNotFound)
	}
	f := &Folder{ID: c.FolderID, AccountID: c.AccountID, Name: c.Name, CreatedAt: c.Now}
	s.folders[f.ID] = f
	s.accountFolders[f.AccountID] = append(s.accountFolders[f.AccountID], f.ID)
	return *f, nil
}
