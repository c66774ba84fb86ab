package fsm

// Kinds of ledger movement. Every change of a balance is one of these, written in
// the same apply that changes the balance.
const (
	// LedgerOpening is an account's balance when export was switched on: it makes
	// the sum of an account's exported ledger equal its balance.
	LedgerOpening = "opening"
	LedgerGrant   = "grant"
	LedgerCharge  = "charge"
	LedgerRefund  = "refund"
)

// LedgerEntry is one movement of credits. Index and Seq (the n-th movement in that
// log entry) identify it for good; Amount is signed (charges are negative) and
// Balance is the account's balance right after it.
type LedgerEntry struct {
	Index     uint64 `msgpack:"index"`
	Seq       uint32 `msgpack:"seq"`
	AccountID string `msgpack:"account"`
	Kind      string `msgpack:"kind"`
	Amount    int64  `msgpack:"amount"`
	Balance   int64  `msgpack:"balance"`
	VideoID   string `msgpack:"video,omitempty"`
	// Ref is the app's purchase id or debit key that caused the movement.
	Ref string `msgpack:"ref,omitempty"`
	At  int64  `msgpack:"at"`
}

// VideoEvent is a video's state after one change of status.
type VideoEvent struct {
	Index     uint64 `msgpack:"index"`
	Seq       uint32 `msgpack:"seq"`
	VideoID   string `msgpack:"video"`
	AccountID string `msgpack:"account"`
	Status    string `msgpack:"status"`
	Mode      string `msgpack:"mode"`
	Model     string `msgpack:"model,omitempty"`
	Charged   int64  `msgpack:"charged"`
	Refunded  bool   `msgpack:"refunded"`
	Error     string `msgpack:"error,omitempty"`
	At        int64  `msgpack:"at"`
}

// outbox is the hot part of what the app database has not acknowledged yet; the
// ledger entries and video events themselves are tables (appdb_outbox.go). They
// are recorded only while export is on (SetAppExport), so a farm without an app
// database keeps no ledger at all; TrimExported drops what the app database has
// committed.
type outbox struct {
	on bool
	// index is the log index being applied and seq the movements recorded in it:
	// together they key every entry, the same on every replica.
	index uint64
	seq   uint32
}

func (o *outbox) begin(index uint64) { o.index, o.seq = index, 0 }

func (o *outbox) next() uint32 {
	o.seq++
	return o.seq
}

// move changes a's balance by amount and records the movement: the one place
// credits move. Callers have checked the movement first: a grant against
// MaxCredits (checkCredit), a charge against the balance; a refund gives back a
// charge the ceiling already counted. The sum is checked all the same and never
// wraps (addCredits); the ledger records the change actually made.
func (s *state) move(a *Account, kind string, amount int64, videoID, ref string, now int64) {
	before := a.Credits
	a.Credits = addCredits(before, amount)
	amount = a.Credits - before
	if !s.out.on || amount == 0 {
		return
	}
	e := LedgerEntry{Index: s.out.index, Seq: s.out.next(), AccountID: a.ID, Kind: kind,
		Amount: amount, Balance: a.Credits, VideoID: videoID, Ref: ref, At: now}
	s.appLedger.set(outboxKey(e.Index, e.Seq), &e, false)
}

// videoChanged records v's state after a change of status.
func (s *state) videoChanged(v *Video, now int64) {
	s.touch(v)
	s.videoEvent(v, now)
}

// videoEvent puts v's state in the outbox, when exporting.
func (s *state) videoEvent(v *Video, now int64) {
	if !s.out.on {
		return
	}
	e := VideoEvent{Index: s.out.index, Seq: s.out.next(), VideoID: v.ID, AccountID: v.AccountID,
		Status: v.Status, Mode: v.Spec.Mode, Model: v.Spec.Model, Charged: v.CreditsCharged, Refunded: v.CreditsRefunded,
		Error: v.ErrorMessage, At: now}
	s.appEvents.set(outboxKey(e.Index, e.Seq), &e, false)
}
