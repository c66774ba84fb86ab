package fsm

import (
	"fmt"
	"slices"
)

// inbound remembers how far the app's rows have been applied, and why rows were
// refused until the bridge has quarantined them in the app database.
type inbound struct {
	mark    InboundMark
	refused []Refusal // in mark order
}

// Refusal is an app row the FSM did not apply, and why.
type Refusal struct {
	Mark   InboundMark `msgpack:"mark"`
	Reason string      `msgpack:"reason"`
}

// AppRowResult is what AppRow answers. A refused row is consumed all the same (it
// must not stop the rows behind it); Refusal says why, also when the row is sent
// again, so the bridge can quarantine it after a crash.
type AppRowResult struct {
	Applied   bool
	Duplicate bool
	Refusal   string
}

// Debit is an idempotent debit by the app, remembered for IdempotencyTTL.
type Debit struct {
	AccountID string `msgpack:"account"`
	Key       string `msgpack:"key"`
	Amount    int64  `msgpack:"amount"`
	Balance   int64  `msgpack:"balance"` // right after the debit
	CreatedAt int64  `msgpack:"created_at"`
}

// DebitResult answers DebitCredits; Replayed is true when the key was seen before.
type DebitResult struct {
	Debit
	Replayed bool
}

// MaxDebitKey bounds a debit's idempotency key, like the API's Idempotency-Key.
const MaxDebitKey = 255

func (s *state) applyAppRows(c *AppRows) ([]AppRowResult, error) {
	out := make([]AppRowResult, len(c.Rows))
	for i := range c.Rows {
		out[i] = s.applyAppRow(&c.Rows[i])
	}
	return out, nil
}

func (s *state) applyAppRow(c *AppRow) AppRowResult {
	if !s.in.mark.Less(c.Mark) {
		for _, r := range s.in.refused {
			if r.Mark == c.Mark {
				return AppRowResult{Duplicate: true, Refusal: r.Reason}
			}
		}
		return AppRowResult{Duplicate: true}
	}
	s.in.mark = c.Mark
	if err := s.appRow(c); err != nil {
		s.in.refused = append(s.in.refused, Refusal{Mark: c.Mark, Reason: err.Error()})
		return AppRowResult{Refusal: err.Error()}
	}
	return AppRowResult{Applied: true}
}

func (s *state) appRow(c *AppRow) error {
	switch c.Table {
	case AppAccounts:
		if c.AccountID == "" || !ValidPlan(c.Plan) || c.Credits < 0 {
			return fmt.Errorf("%w: account needs an id, a plan (free, pro, max) and credits >= 0", ErrInvalidCommand)
		}
		if _, ok := s.accounts[c.AccountID]; ok {
			return fmt.Errorf("%w: account %s exists", ErrInvalidCommand, c.AccountID)
		}
		if err := s.checkCredit("opening balance", c.AccountID, nil, c.Credits); err != nil {
			return err
		}
		s.openAccount(c.AccountID, c.Name, c.Plan, c.Credits, c.Now)
		return nil
	case AppPurchases:
		a, ok := s.accounts[c.AccountID]
		if !ok {
			return fmt.Errorf("purchase %s for %s: %w", c.PurchaseID, c.AccountID, ErrAccountNotFound)
		}
		if c.Credits <= 0 {
			return fmt.Errorf("%w: purchase %s of %d credits: must be positive", ErrInvalidCommand, c.PurchaseID, c.Credits)
		}
		if err := s.checkCredit("purchase "+c.PurchaseID, a.ID, a, c.Credits); err != nil {
			return err
		}
		s.move(a, LedgerGrant, c.Credits, "", c.PurchaseID, c.Now)
		return nil
	case AppPlanChanges:
		_, err := s.applySetPlan(&SetPlan{AccountID: c.AccountID, Plan: c.Plan, Now: c.Now})
		return err
	case AppKeys:
		if _, ok := s.keys[c.KeyID]; ok || c.KeyID == "" {
			return fmt.Errorf("%w: key id %q is empty or taken", ErrInvalidCommand, c.KeyID)
		}
		_, err := s.applyCreateKey(&CreateKey{AccountID: c.AccountID, KeyID: c.KeyID, KeyHash: c.KeyHash, KeyHint: c.KeyHint, Now: c.Now})
		return err
	case AppKeyRevocations:
		_, err := s.applyRevokeKey(&RevokeKey{KeyID: c.KeyID, Now: c.Now})
		return err
	}
	return fmt.Errorf("%w: unknown app table %q", ErrInvalidCommand, c.Table)
}

func (s *state) applySetAppExport(c *SetAppExport) (Nothing, error) {
	if c.On == s.out.on {
		return Nothing{}, nil
	}
	if !c.On {
		s.out = outbox{index: s.out.index, seq: s.out.seq}
		dropThrough(s.appLedger, ^uint64(0))
		dropThrough(s.appEvents, ^uint64(0))
		return Nothing{}, nil
	}
	s.out.on = true
	ids := make([]string, 0, len(s.accounts))
	for id := range s.accounts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := s.accounts[id]
		if a.Credits != 0 {
			e := LedgerEntry{Index: s.out.index, Seq: s.out.next(), AccountID: id,
				Kind: LedgerOpening, Amount: a.Credits, Balance: a.Credits, At: c.Now}
			s.appLedger.set(outboxKey(e.Index, e.Seq), &e, false)
		}
		s.eachVideo(id, "", false, 0, func(v *Video, _ uint64) bool {
			s.videoEvent(v, c.Now) // the export starts with every video's state; none changes
			return true
		})
	}
	return Nothing{}, nil
}

func (s *state) applyTrimExported(c *TrimExported) (Nothing, error) {
	dropThrough(s.appLedger, c.Through)
	dropThrough(s.appEvents, c.Through)
	i := 0
	for i < len(s.in.refused) && !c.Inbound.Less(s.in.refused[i].Mark) {
		i++
	}
	s.in.refused = slices.Delete(s.in.refused, 0, i)
	return Nothing{}, nil
}

func (s *state) applyDebitCredits(c *DebitCredits) (DebitResult, error) {
	a, ok := s.accounts[c.AccountID]
	if !ok {
		return DebitResult{}, fmt.Errorf("debit %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if c.Amount <= 0 || c.Key == "" || len(c.Key) > MaxDebitKey {
		return DebitResult{}, fmt.Errorf("%w: a debit needs a positive amount and a key of 1-%d characters", ErrInvalidCommand, MaxDebitKey)
	}
	k := idemID(c.AccountID, c.Key)
	if d, ok := s.debits.get(k); ok {
		if d.Amount != c.Amount {
			return DebitResult{}, fmt.Errorf("%w: debit key %q was used for %d credits, not %d", ErrDuplicateRequest, c.Key, d.Amount, c.Amount)
		}
		return DebitResult{Debit: *d, Replayed: true}, nil
	}
	if a.Credits < c.Amount {
		return DebitResult{}, &InsufficientCreditsError{Required: c.Amount, Remaining: a.Credits}
	}
	s.move(a, LedgerCharge, -c.Amount, "", c.Key, c.Now)
	d := &Debit{AccountID: c.AccountID, Key: c.Key, Amount: c.Amount, Balance: a.Credits, CreatedAt: c.Now}
	s.debits.put(k, d)
	return DebitResult{Debit: *d}, nil
}

// openAccount adds an account and records its opening balance as a grant.
func (s *state) openAccount(id, name, plan string, credits, now int64) *Account {
	a := &Account{ID: id, Name: name, Plan: plan, CreatedAt: now}
	s.accounts[id] = a
	s.move(a, LedgerGrant, credits, "", "", now)
	return a
}

// AppExportStatus is where the bridge's state in the FSM stands.
type AppExportStatus struct {
	On            bool
	Inbound       InboundMark
	Refused       []Refusal
	PendingLedger int
	PendingEvents int
	// FirstHeld is the lowest log index of a held ledger entry or event; 0 for none.
	FirstHeld uint64
}

// AppExport reports the bridge's state in the FSM.
func (f *FSM) AppExport() AppExportStatus {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := AppExportStatus{On: f.s.out.on, Inbound: f.s.in.mark, Refused: slices.Clone(f.s.in.refused),
		PendingLedger: f.s.appLedger.n, PendingEvents: f.s.appEvents.n}
	st.FirstHeld = firstHeld(f.s.appLedger, (*LedgerEntry).index)
	if e := firstHeld(f.s.appEvents, (*VideoEvent).index); e != 0 && (st.FirstHeld == 0 || e < st.FirstHeld) {
		st.FirstHeld = e
	}
	return st
}
