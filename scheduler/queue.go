package scheduler

import (
	"cmp"
	"slices"
)

// The ready queue is indexed three levels deep so that a placement never
// scans tasks:
//
//	level (priority)  ->  bucket (requirement class)  ->  acctQueue (account)
//	                      heap of accounts by             tasks by age, ranked
//	                      fair-share key
//
// A node visits, at the highest non-empty priority, the buckets of the
// classes its hardware can run, looks at the top account of each, and takes
// that account's oldest task. Each level keeps a flat array with a copy of
// every bucket's top (account key and oldest task), so that visit touches
// one array and, for the few buckets that can win, one task.

// level holds the ready tasks of one priority.
type level struct {
	prio    int
	buckets []*bucket  // by class index; nil where none
	tops    []topEntry // by class index: copy of each bucket's top
	ready   int
}

// topKey is a copy of an account's fair-share key (see account.ahead).
type topKey struct {
	acct    *account
	running int
	served  uint64
}

// ahead reports whether the account with key k is served before the one
// with key o: fewer running tasks, then served longer ago, then smaller id.
func (k topKey) ahead(o topKey) bool {
	if k.running != o.running {
		return k.running < o.running
	}
	if k.served != o.served {
		return k.served < o.served
	}
	return k.acct.id < o.acct.id
}

func keyOf(a *account) topKey { return topKey{acct: a, running: a.running, served: a.lastServed} }

// topEntry is what a bucket offers first: its top account's key and that
// account's oldest task. key.acct is nil for an empty bucket.
type topEntry struct {
	key  topKey
	head *task
}

// bucket holds, for one (priority, class), the accounts with ready tasks,
// in a min-heap by fair-share key. Keys are stored in the heap array so
// that sifting does not chase pointers.
type bucket struct {
	lvl   *level
	ci    int
	heap  []bucketEntry
	tasks int
}

type bucketEntry struct {
	key  topKey
	aq   *acctQueue
	head *task // aq's oldest task, copied so that retop reads only the heap
	// n is aq's task count, copied like key (the account's running count
	// and last service) so that a queue position (State.position), which
	// visits every entry of the bucket, reads the heap alone and not three
	// records per account.
	n int
}

// acctQueue is one account's ready tasks of one (priority, class).
type acctQueue struct {
	acct  *account
	lvl   *level
	cls   *class
	b     *bucket
	tasks taskSet // by age (task.older), with ranks
	bIdx  int     // index in b.heap
	aIdx  int     // index in acct.queues
}

// newHead refreshes the copies of aq's oldest task and task count after
// its task heap changed.
func (aq *acctQueue) newHead() {
	e := &aq.b.heap[aq.bIdx]
	e.n = aq.tasks.Len()
	if h := aq.head(); e.head != h {
		e.head = h
		if aq.bIdx == 0 {
			aq.b.retop()
		}
	}
}

// retop refreshes the bucket's entry in lvl.tops.
func (b *bucket) retop() {
	if len(b.heap) == 0 {
		b.lvl.tops[b.ci] = topEntry{}
		return
	}
	e := &b.heap[0]
	b.lvl.tops[b.ci] = topEntry{key: e.key, head: e.head}
}

// levelFor returns the level of priority p, creating it if needed.
func (s *State) levelFor(p int) *level {
	i, found := s.levelIndex(p)
	if found {
		return s.levels[i]
	}
	l := s.newLevel(p)
	s.levels = slices.Insert(s.levels, i, l)
	return l
}

// levelIndex finds priority p's place in s.levels (highest first).
func (s *State) levelIndex(p int) (int, bool) {
	if len(s.levels) > 0 && s.levels[0].prio == p { // most tasks: one level
		return 0, true
	}
	return slices.BinarySearchFunc(s.levels, p, func(l *level, p int) int { return cmp.Compare(p, l.prio) })
}

func (s *State) dropLevel(l *level) {
	if i, found := s.levelIndex(l.prio); found {
		s.levels = slices.Delete(s.levels, i, i+1)
	}
	s.spareLevel(l)
}

func (l *level) bucket(ci int) *bucket {
	if ci < len(l.buckets) {
		return l.buckets[ci]
	}
	return nil
}

// makeReady queues t for placement, as of now (unix ms).
func (s *State) makeReady(t *task, now int64) {
	s.changed(t.v)
	t.state = TaskReady
	t.readyAt = now
	t.percent = 0
	a := t.v.acct
	l := s.levelFor(t.v.prio)
	ci := t.cls.idx
	if ci >= len(l.buckets) {
		l.buckets = append(l.buckets, make([]*bucket, ci+1-len(l.buckets))...)
		l.tops = append(l.tops, make([]topEntry, ci+1-len(l.tops))...)
	}
	b := l.buckets[ci]
	if b == nil {
		b = &bucket{lvl: l, ci: ci}
		l.buckets[ci] = b
	}
	b.tasks++
	l.ready++
	s.ready++
	if aq := a.queue(l.prio, ci); aq != nil {
		aq.pushTask(t)
		aq.newHead()
		return
	}
	aq := s.newQueue(a, l, t.cls, b)
	a.addQueue(aq)
	aq.pushTask(t)
	b.push(aq)
}

// unready takes a ready task out of the queue.
func (s *State) unready(t *task) {
	aq := t.aq
	b := aq.b
	aq.removeTask(t)
	b.tasks--
	aq.lvl.ready--
	s.ready--
	if aq.tasks.Len() > 0 {
		aq.newHead()
		return
	}
	b.remove(aq.bIdx)
	aq.acct.removeQueue(aq)
	// An emptied bucket stays, for the next task of its class.
	if l := aq.lvl; l.ready == 0 {
		s.dropLevel(l)
	}
	s.spareQueue(aq)
}

// rekey stores a's new key in every bucket it is queued in and restores
// heap order: worse says the key got worse (a was served), else better.
func (a *account) rekey(worse bool) {
	k := keyOf(a)
	for _, aq := range a.queues {
		b := aq.b
		i := aq.bIdx
		b.heap[i].key = k
		if worse {
			b.down(i)
		} else {
			b.up(i)
		}
		if i == 0 || aq.bIdx == 0 {
			b.retop()
		}
	}
}

// ---- bucket heap, ordered by fair-share key ----

func (b *bucket) less(i, j int) bool { return b.heap[i].key.ahead(b.heap[j].key) }

func (b *bucket) swap(i, j int) {
	b.heap[i], b.heap[j] = b.heap[j], b.heap[i]
	b.heap[i].aq.bIdx = i
	b.heap[j].aq.bIdx = j
}

func (b *bucket) push(aq *acctQueue) {
	aq.bIdx = len(b.heap)
	b.heap = append(b.heap, bucketEntry{key: keyOf(aq.acct), aq: aq, head: aq.head(), n: aq.tasks.Len()})
	b.up(aq.bIdx)
	b.retop()
}

func (b *bucket) remove(i int) {
	last := len(b.heap) - 1
	if i != last {
		b.swap(i, last)
	}
	b.heap[last] = bucketEntry{}
	b.heap = b.heap[:last]
	if i != last && !b.down(i) {
		b.up(i)
	}
	b.retop()
}

// up and down move the entry at i with a hole: children or parents shift
// one step and the entry is written once, at its final index.
func (b *bucket) up(i int) {
	e := b.heap[i]
	start := i
	for i > 0 {
		p := (i - 1) / 2
		if !e.key.ahead(b.heap[p].key) {
			break
		}
		b.heap[i] = b.heap[p]
		b.heap[i].aq.bIdx = i
		i = p
	}
	if i != start {
		b.heap[i] = e
		e.aq.bIdx = i
	}
}

func (b *bucket) down(i int) bool {
	e := b.heap[i]
	start, n := i, len(b.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && b.less(r, l) {
			m = r
		}
		if !b.heap[m].key.ahead(e.key) {
			break
		}
		b.heap[i] = b.heap[m]
		b.heap[i].aq.bIdx = i
		i = m
	}
	if i != start {
		b.heap[i] = e
		e.aq.bIdx = i
	}
	return i > start
}

// ---- acctQueue tasks, ordered by task.older (taskset.go) ----

// head is aq's oldest task; aq is never empty while queued.
func (aq *acctQueue) head() *task { return aq.tasks.Min() }

func (aq *acctQueue) pushTask(t *task) {
	t.aq = aq
	aq.tasks.Add(t)
}

func (aq *acctQueue) removeTask(t *task) {
	aq.tasks.Remove(t)
	t.aq = nil
}

// rank counts aq's tasks older than t.
func (aq *acctQueue) rank(t *task) int { return aq.tasks.Rank(t) }
