package fsm

import (
	"encoding/binary"
	"slices"
)

// The app bridge's outbox (ledger entries and video events the app database
// has not committed) is two tables (table.go) keyed by log index and sequence
// number, big endian, so key order is log order. While the app database is
// reachable it holds a few batches; while it is down for days it holds every
// movement of those days, and then it must not live in memory or be copied
// whole into every checkpoint: the file holds it, memory what changed since
// the last checkpoint.
const (
	bucketAppLedger = "app_ledger" // index (8 bytes), seq (4 bytes) → msgpack LedgerEntry
	bucketAppEvents = "app_events" // index (8 bytes), seq (4 bytes) → msgpack VideoEvent
)

// outboxKey is the key of the entry at log index and seq.
func outboxKey(index uint64, seq uint32) string {
	return string(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(make([]byte, 0, 12), index), seq))
}

// outboxAfter is the first key of an index past after; ok is false past the
// last index.
func outboxAfter(after uint64) (string, bool) {
	if after == ^uint64(0) {
		return "", false
	}
	return outboxKey(after+1, 0), true
}

func (e *LedgerEntry) index() uint64 { return e.Index }
func (e *VideoEvent) index() uint64  { return e.Index }

// outboxEntry is what both outbox tables hold.
type outboxEntry interface {
	LedgerEntry | VideoEvent
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
	ledger, lt := above(f.s.appLedger, after, limit, (*LedgerEntry).index)
	events, et := above(f.s.appEvents, after, limit, (*VideoEvent).index)
	through := min(lt, et, max(f.applied, o.index))
	ledger = ledger[:firstAbove(ledger, through, (*LedgerEntry).index)]
	events = events[:firstAbove(events, through, (*VideoEvent).index)]
	return Outbox{Ledger: ledger, Events: events, Through: max(through, after), On: o.on}
}

// ExportBacklog counts the ledger entries and video events past index after, and
// says when the oldest of them happened (Unix nanoseconds; 0 when none wait).
func (f *FSM) ExportBacklog(after uint64) (pending int, oldest int64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ln, lat := backlog(f.s.appLedger, after, func(e *LedgerEntry) int64 { return e.At })
	en, eat := backlog(f.s.appEvents, after, func(e *VideoEvent) int64 { return e.At })
	oldest = lat
	if eat != 0 && (oldest == 0 || eat < oldest) {
		oldest = eat
	}
	return ln + en, oldest
}

// backlog counts t's entries past index after, and the time of the first of
// them. It walks only the entries at or below after, which the app database
// committed and the next TrimExported drops: a backlog of days costs one read.
func backlog[T outboxEntry](t *table[T], after uint64, at func(*T) int64) (n int, first int64) {
	start, ok := outboxAfter(after)
	if !ok {
		return 0, 0
	}
	below := 0
	t.eachRange("", "", start, func(string, *T) bool { below++; return true })
	if _, e, ok := t.firstFrom(start); ok {
		first = at(e)
	}
	return t.n - below, first
}

// above returns the entries of t past index after: at least limit (when there
// are that many) and then the rest of the last one's index. through is that
// last index when t goes on past it, and the largest uint64 otherwise.
func above[T outboxEntry](t *table[T], after uint64, limit int, index func(*T) uint64) (items []T, through uint64) {
	through = ^uint64(0)
	start, ok := outboxAfter(after)
	if !ok {
		return nil, through
	}
	t.eachRange("", start, "", func(_ string, e *T) bool {
		if n := len(items); n > 0 && n >= limit && index(e) != index(&items[n-1]) {
			through = index(&items[n-1])
			return false
		}
		items = append(items, *e)
		return true
	})
	return items, through
}

// firstAbove is the position of the first of the index-ordered list past after.
func firstAbove[T any](list []T, after uint64, index func(*T) uint64) int {
	i, _ := slices.BinarySearchFunc(list, after, func(e T, t uint64) int {
		if index(&e) <= t {
			return -1
		}
		return 1
	})
	return i
}

// dropThrough forgets t's entries at or below index through (all of them for
// the largest uint64), and says how many.
func dropThrough[T outboxEntry](t *table[T], through uint64) int {
	end, _ := outboxAfter(through) // "" past the last index: no end
	var keys []string
	t.eachRange("", "", end, func(k string, _ *T) bool {
		keys = append(keys, k)
		return true
	})
	for _, k := range keys {
		t.del(k)
	}
	return len(keys)
}

// firstHeld is the lowest log index of an entry t holds; 0 for none.
func firstHeld[T outboxEntry](t *table[T], index func(*T) uint64) uint64 {
	if _, e, ok := t.firstFrom(""); ok {
		return index(e)
	}
	return 0
}
