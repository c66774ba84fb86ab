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
	s.out.ledger = append(s.out.ledger, LedgerEntry{Index: s.out.index, Seq: s.out.next(), AccountID: a.ID, Kind: kind,
		Amount: amount, Balance: a.Credits, VideoID: videoID, Ref: ref, At: now})
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
	s.out.events = append(s.out.events, VideoEvent{Index: s.out.index, Seq: s.out.next(), VideoID: v.ID, AccountID: v.AccountID,
		Status: v.Status, Mode: v.Spec.Mode, Model: v.Spec.Model, Charged: v.CreditsCharged, Refunded: v.CreditsRefunded,
		Error: v.ErrorMessage, At: now})
}

// Outbox is what waits for export: every ledger entry and video event with an
// index in (after, Through], in log order.
type Outbox struct {
	Ledger []LedgerEntry
	Events []VideoEvent
	// Through is the last log index whose movements are all in this outbox: the
	// export cursor once they are committed.
	Through uint64
	// On says whether export is switched on.
	On bool
}

// PendingExport returns what waits past index after: about max entries of each
// list, never splitting the entries of one log index.
func (f *FSM) PendingExport(after uint64, limit int) Outbox {
	f.mu.RLock()
	defer f.mu.RUnlock()
	o := f.s.out
	ledger, lt := above(o.ledger, after, limit, func(e LedgerEntry) uint64 { return e.Index })
	events, et := above(o.events, after, limit, func(e VideoEvent) uint64 { return e.Index })
	through := min(lt, et, max(f.applied, o.index))
	ledger = ledger[:firstAbove(ledger, through, func(e LedgerEntry) uint64 { return e.Index })]
	events = events[:firstAbove(events, through, func(e VideoEvent) uint64 { return e.Index })]
	return Outbox{Ledger: slices.Clone(ledger), Events: slices.Clone(events), Through: max(through, after), On: o.on}
}

// ExportBacklog counts the ledger entries and video events past index after, and
// says when the oldest of them happened (Unix nanoseconds; 0 when none wait).
func (f *FSM) ExportBacklog(after uint64) (pending int, oldest int64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	o := f.s.out
	ledger := o.ledger[firstAbove(o.ledger, after, func(e LedgerEntry) uint64 { return e.Index }):]
	events := o.events[firstAbove(o.events, after, func(e VideoEvent) uint64 { return e.Index }):]
	if len(ledger) > 0 {
		oldest = ledger[0].At
	}
	if len(events) > 0 && (oldest == 0 || events[0].At < oldest) {
		oldest = events[0].At
	}
	return len(ledger) + len(events), oldest
}

// above returns the items of the index-ordered list above after: at least limit (when
// there are that many) and then the rest of the last one's index. through is that
// last index when the list goes on past it, and the largest uint64 otherwise.
func above[T any](list []T, after uint64, limit int, index func(T) uint64) (items []T, through uint64) {
	list = list[firstAbove(list, after, index):]
	if len(list) <= limit {
		return list, ^uint64(0)
	}
	through = index(list[limit-1])
	return list[:firstAbove(list, through, index)], through
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
