package scheduler

import (
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// Retries after a failure. Fail requeues a task at once, so that another
// node takes it. FailWithBackoff does the same while some live node that
// could run the task has not failed it yet; once every capable node has
// (a farm of one or two nodes, or a fault they share: a model server that
// is down, a full disk), retrying at once would only burn the attempts, so
// the task waits in TaskRetrying: base × 2^(failures−1), at most
// 2^maxBackoffDoublings × base. Place and Expire make a retrying task ready once
// its time has come; ExpiryDue reports that time, so the leader proposes
// Expire for it as it does for leases. A node that registers (UpsertNode)
// and could run a retrying task it has not failed takes it at once.

// maxBackoffDoublings caps a retry's wait at 2^5 = 32 times the base.
const maxBackoffDoublings = 5

// retryEntry is a retrying task in State.retrying, by (at, age). Entries
// of tasks that left TaskRetrying (their video was cancelled) are skipped
// when they come up.
type retryEntry struct {
	at int64
	t  *task
}

// live reports whether e is its task's current retry; entries of tasks
// that left TaskRetrying (made ready early, or cancelled) are skipped.
func (e retryEntry) live() bool { return e.t.state == TaskRetrying && e.t.past().retryAt == e.at }

// before orders retries: earlier time, then older task.
func (e retryEntry) before(o retryEntry) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.t.older(o.t)
}

type retryHeap []retryEntry

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(retryEntry)) }
func (h *retryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = retryEntry{}
	*h = old[:len(old)-1]
	return e
}

// FailWithBackoff is Fail, except that a task requeued when every live
// node that could run it has already failed it waits before it is ready
// again: base after its first failure, doubling with each failure, at
// most 32 × base. A base of 0 is Fail.
func (s *State) FailWithBackoff(ref LeaseRef, message string, now time.Time, base time.Duration) (Outcome, error) {
	if base < 0 {
		return Outcome{}, fmt.Errorf("%w: retry backoff must not be negative, got %v", ErrInvalid, base)
	}
	t, err := s.holder(ref)
	if err != nil {
		return Outcome{}, err
	}
	return s.failAttempt(t, message, ms(now), base.Milliseconds()), nil
}

// requeue makes a failed task ready again, at once or, when base > 0 and
// no capable node is left that has not failed it, after its backoff.
func (s *State) requeue(t *task, message string, now, base int64) {
	if base <= 0 || t.cls.capable > len(t.past().failedNodes) {
		s.makeReady(t, now)
		return
	}
	s.hold(t, now+base<<min(t.past().failures-1, maxBackoffDoublings), message)
}

// hold puts t in TaskRetrying until at.
func (s *State) hold(t *task, at int64, message string) {
	s.changed(t.v)
	t.state = TaskRetrying
	h := t.history()
	h.retryAt = at
	h.lastFailure = message
	heap.Push(&s.retrying, retryEntry{at: at, t: t})
}

// release makes ready every retrying task whose time is at or before now,
// in (time, age) order, and returns how many.
func (s *State) release(now int64) int {
	n := 0
	for len(s.retrying) > 0 && s.retrying[0].at <= now {
		e := heap.Pop(&s.retrying).(retryEntry)
		if !e.live() {
			continue
		}
		s.makeReady(e.t, e.at)
		n++
	}
	return n
}

// releaseFor makes ready at once the retrying tasks that live node n can
// run and has not failed: they wait only because every node that could
// run them had failed them, and n is a fresh one (a node that registered
// during the wait). Oldest retry time first.
func (s *State) releaseFor(n *node, now int64) {
	if !n.live() || len(s.retrying) == 0 {
		return
	}
	var fresh []retryEntry
	for _, e := range s.retrying {
		t := e.t
		if e.live() && n.staticFit(&t.cls.req) && !slices.Contains(t.past().failedNodes, n.spec.ID) {
			fresh = append(fresh, e)
		}
	}
	slices.SortFunc(fresh, func(a, b retryEntry) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	for _, e := range fresh {
		s.makeReady(e.t, now) // its heap entry is skipped when it comes up
	}
}

// retryDue reports whether a retrying task's time is at or before now. It
// changes nothing (readers call it): entries of cancelled tasks are passed
// over, not removed.
func (s *State) retryDue(now int64) bool {
	for _, e := range s.retrying {
		if e.at <= now && e.live() {
			return true
		}
	}
	return false
}

// retryReason says why a video whose next task is retrying waits.
func retryReason(t *task) (Reason, string) {
	return ReasonRetrying, fmt.Sprintf("%s failed on its last attempt (%d failure(s) so far); it is tried again at %s",
		t.name(), t.past().failures, fromMS(t.past().retryAt).Format(time.RFC3339))
}
