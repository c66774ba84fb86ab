package scheduler

import "sort"

// Reading many videos' statuses at once (a node's event streams look at
// every video they follow after each applied command): a video's queue
// position needs its task's rank among its account's ready tasks, a binary
// search over the account's B-tree by index, O(log² n) each. Inside a batch
// an account queue asked often enough is copied once into an ordered slice
// and ranked by a plain binary search: the same answer, for a fraction of
// the cost. The state must not change between BeginStatusBatch and
// EndStatusBatch.

// rankMemo is one batch's copies of the account queues asked most.
type rankMemo map[*acctQueue]*rankedQueue

type rankedQueue struct {
	asked int
	items []*task // the queue oldest first, once copied
}

// BeginStatusBatch starts a batch of reads (VideoStatus) on an unchanging
// state; EndStatusBatch ends it. Answers are the same inside and outside.
func (s *State) BeginStatusBatch() { s.ranks = rankMemo{} }

// EndStatusBatch ends the batch BeginStatusBatch started.
func (s *State) EndStatusBatch() { s.ranks = nil }

// rankOf is aq.rank(t), from the batch's copy of aq when one pays.
func (s *State) rankOf(aq *acctQueue, t *task) int {
	if s.ranks == nil || aq.tasks.big == nil {
		return aq.rank(t)
	}
	rq := s.ranks[aq]
	if rq == nil {
		rq = &rankedQueue{}
		s.ranks[aq] = rq
	}
	rq.asked++
	if rq.items == nil {
		// A copy costs about a nanosecond a task, a rank about a
		// microsecond: copy once a thousandth of the queue was asked.
		if rq.asked*1024 < aq.tasks.big.Len() {
			return aq.rank(t)
		}
		rq.items = aq.tasks.big.Items()
	}
	return sort.Search(len(rq.items), func(i int) bool { return !rq.items[i].older(t) })
}
