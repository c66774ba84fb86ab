package scheduler

import (
	"slices"

	"github.com/tidwall/btree"
)

// taskSet is one account queue's ready tasks, ordered by age (task.older).
// Status asks for a task's rank among them after every create and on every
// read, so it must not scan (one account with 200,000 queued videos made
// each create cost a millisecond); placement pushes and pops them by the
// million, where most queues hold a task or two and empty again.
//
// So a short set is a sorted slice (insertion moves a few pointers, rank is
// a binary search, and the slice is kept when the queue empties), and a set
// that outgrows it moves to a counted B-tree (github.com/tidwall/btree:
// rank by binary search over GetAt, O(log² n)) until it empties. A B-tree
// for every queue made the simulator's week 26% slower: it allocates a
// root node each time an empty queue gets a task.
type taskSet struct {
	small []*task
	big   *btree.BTreeG[*task] // nil while small
}

// smallTasks is the size past which a set moves to the B-tree: inserting
// into a sorted slice moves on average half of it.
const smallTasks = 64

func olderTask(a, b *task) bool { return a.older(b) }

func (s *taskSet) Len() int {
	if s.big != nil {
		return s.big.Len()
	}
	return len(s.small)
}

// Min is the oldest task, or nil.
func (s *taskSet) Min() *task {
	if s.big != nil {
		t, _ := s.big.Min()
		return t
	}
	if len(s.small) == 0 {
		return nil
	}
	return s.small[0]
}

func (s *taskSet) find(t *task) (int, bool) {
	return slices.BinarySearchFunc(s.small, t, func(u, t *task) int {
		switch {
		case u == t:
			return 0
		case u.older(t):
			return -1
		}
		return 1
	})
}

func (s *taskSet) Add(t *task) {
	if s.big != nil {
		s.big.Set(t)
		return
	}
	if len(s.small) == smallTasks {
		s.big = btree.NewBTreeGOptions(olderTask, btree.Options{NoLocks: true})
		for _, u := range s.small {
			s.big.Load(u) // in order: appends
		}
		clear(s.small)
		s.small = s.small[:0]
		s.big.Set(t)
		return
	}
	i, _ := s.find(t)
	s.small = slices.Insert(s.small, i, t)
}

func (s *taskSet) Remove(t *task) {
	if s.big != nil {
		s.big.Delete(t)
		if s.big.Len() == 0 {
			s.big = nil
		}
		return
	}
	// Placement takes the oldest task: no search, which would compare
	// tasks the cache no longer holds.
	if len(s.small) > 0 && s.small[0] == t {
		s.small = slices.Delete(s.small, 0, 1)
		return
	}
	if i, ok := s.find(t); ok {
		s.small = slices.Delete(s.small, i, i+1)
	}
}

// Rank counts the tasks older than t.
func (s *taskSet) Rank(t *task) int {
	if s.big == nil {
		i, _ := s.find(t)
		return i
	}
	// A create asks for the place of the video it just queued, the
	// account's newest task: one walk down the right edge instead of
	// log n lookups by index, on the apply goroutine every create waits for.
	if u, _ := s.big.Max(); u == t {
		return s.big.Len() - 1
	}
	lo, hi := 0, s.big.Len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if u, _ := s.big.GetAt(m); u.older(t) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Items lists the tasks oldest first (for checks).
func (s *taskSet) Items() []*task {
	if s.big != nil {
		return s.big.Items()
	}
	return slices.Clone(s.small)
}
