package fsm

import (
	"sync"
	"unsafe"
)

// Commands decoded ahead. The FSM's goroutine applies one entry at a time,
// and on a many-core leader that goroutine is what bounds the creates a
// second (docs/benchmarks.md), so work that need not be on it moves off it.
// Decoding is such work on the leader: it proposed its entries itself, and
// the goroutine proposing one decodes it (Predecode), in parallel with the
// others, for the apply to take instead of decoding the same bytes again.
//
// An entry is found by the address and length of its bytes. Raft hands the
// leader's FSM the very slice it was given to propose; an entry read back
// from the log, or received by a follower, is another slice and is decoded
// as always. Decoding is a pure function of the bytes, so the command taken
// is the one the apply would have decoded, and every replica applies the
// same. The key is a pointer into the bytes, so they stay allocated (and
// their address unique) while the entry is held.

// decodedAhead is a held command and the length of the entry it came from.
type decodedAhead struct {
	n   int
	cmd Command
}

// aheadMap holds the commands decoded ahead until their entry is applied or
// its proposal ends. A plain map under a mutex: each entry is stored once
// and taken or dropped once, and sync.Map's boxed value and trie node were
// two allocations per proposal for no concurrency this needs.
type aheadMap struct {
	mu sync.Mutex
	m  map[*byte]decodedAhead
}

func (a *aheadMap) store(k *byte, d decodedAhead) {
	a.mu.Lock()
	if a.m == nil {
		a.m = map[*byte]decodedAhead{}
	}
	a.m[k] = d
	a.mu.Unlock()
}

// take returns and forgets the command held for k.
func (a *aheadMap) take(k *byte) (decodedAhead, bool) {
	a.mu.Lock()
	d, ok := a.m[k]
	if ok {
		delete(a.m, k)
	}
	a.mu.Unlock()
	return d, ok
}

func (a *aheadMap) drop(k *byte) {
	a.mu.Lock()
	delete(a.m, k)
	a.mu.Unlock()
}

// Predecode decodes entry, which the caller is about to propose, so that
// its apply on this node takes the command instead of decoding it. forget
// drops it: call it once the proposal has ended, applied or not (an entry
// Raft never applies here must not stay held). An entry this binary cannot
// decode is refused, as the apply would refuse it.
func (f *FSM) Predecode(entry []byte) (forget func(), err error) {
	c, err := Decode(entry)
	if err != nil {
		return nil, err
	}
	key := unsafe.SliceData(entry)
	f.ahead.store(key, decodedAhead{n: len(entry), cmd: c})
	return func() { f.ahead.drop(key) }, nil
}

// decode is Decode, taking the command decoded ahead for this very entry
// when there is one; each is taken once.
func (f *FSM) decode(entry []byte) (Command, error) {
	if len(entry) > 0 {
		if d, ok := f.ahead.take(unsafe.SliceData(entry)); ok && d.n == len(entry) {
			return d.cmd, nil
		}
	}
	return Decode(entry)
}
