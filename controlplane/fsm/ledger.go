package fsm

import "slices"

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

// outbox holds what the app database has not acknowledged yet. It is recorded only
// while export is on (SetAppExport), so a farm without an app database keeps no
// ledger at all; TrimExported drops what the app database has committed.
type outbox struct {
	on     bool
	ledger []LedgerEntry
	events []VideoEvent
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
// credits move.
func (s *state) move(a *Account, kind string, amount int64, videoID, ref string, now int64) {
	a.Credits += amount
	if !s.out.on || amount == 0 {
		return
	}
	s.out.ledger = append(s.out.ledger, LedgerEntry{Index: s.out.index, Seq: s.out.next(), AccountID: a.ID, Kind: kind,
		Amount: amount, Balance: a.Credits, VideoID: videoID, Ref: ref, At: now})
}

// videoChanged records v's state after a change of status.
func (s *state) videoChanged(v *Video, now int64) {
	if !s.out.on {
		return
	}
	s.out.events = append(s.out.events, VideoEvent{Index: s.out.index, Seq: s.out.next(), VideoID: v.ID, AccountID: v.AccountID,
		Status: v.Status, Mode: v.Spec.Mode, Model: v.Spec.Model, Charged: v.CreditsCharged, Refunded: v.CreditsRefunded,
		Error: v.ErrorMessage, At: now})
}

// Outbox is what waits for export: ledger entries and video events with an index
// above after, at most max of each, in log order.
type Outbox struct {
	Ledger []LedgerEntry
	Events []VideoEvent
	// On says whether export is switched on.
	On bool
}

// PendingExport returns what the app database has not acknowledged past index after.
func (f *FSM) PendingExport(after uint64, max int) Outbox {
	f.mu.RLock()
	defer f.mu.RUnlock()
	o := f.s.out
	return Outbox{Ledger: slices.Clone(above(o.ledger, after, max, func(e LedgerEntry) uint64 { return e.Index })),
		Events: slices.Clone(above(o.events, after, max, func(e VideoEvent) uint64 { return e.Index })), On: o.on}
}

// above returns at most max items of the index-ordered list whose index is above after.
func above[T any](list []T, after uint64, max int, index func(T) uint64) []T {
	list = list[firstAbove(list, after, index):]
	return list[:min(len(list), max)]
}

// trimThrough drops the items whose index is at most through.
func trimThrough[T any](list []T, through uint64, index func(T) uint64) []T {
	return slices.Delete(list, 0, firstAbove(list, through, index))
}

func firstAbove[T any](list []T, after uint64, index func(T) uint64) int {
	i, _ := slices.BinarySearchFunc(list, after, func(e T, t uint64) int {
		if index(e) <= t {
			return -1
		}
		return 1
	})
	return i
}
