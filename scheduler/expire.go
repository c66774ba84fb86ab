package scheduler

import (
	"slices"
	"time"
)

// ExpireResult lists what Expire did.
type ExpireResult struct {
	// Expired has one outcome per expired lease, in (deadline, token)
	// order: requeued, or the video failed (refund it).
	Expired []Outcome `json:"expired,omitempty"`
	// Leases are the expired leases themselves, in the same order.
	Leases []Lease `json:"leases,omitempty"`
	// NodesDown lists nodes newly marked down, by id.
	NodesDown []string `json:"nodes_down,omitempty"`
	// Retried counts retrying tasks made ready again (retry.go).
	Retried int `json:"retried,omitempty"`
}

// Expire ends every lease whose deadline is at or before now, counting a
// failure of its task on its node (so a task whose nodes keep dying fails
// its video like one that keeps erroring), and marks down the nodes whose
// last heartbeat is Config.NodeTimeout old or older. The leader proposes it
// periodically with its own clock reading as now.
func (s *State) Expire(now time.Time) ExpireResult {
	at := ms(now)
	res := ExpireResult{Retried: s.release(at)}
	for s.leaseDue(at) {
		t := s.leaseHeap[0].t
		res.Leases = append(res.Leases, t.leaseInfo())
		res.Expired = append(res.Expired, s.failAttempt(t, "lease expired", at, 0))
	}
	if s.cfg.NodeTimeout > 0 {
		limit := at - s.cfg.NodeTimeout.Milliseconds()
		for id, n := range s.nodes { // order-independent: each node on its own; output sorted
			if n.silent(limit) {
				s.countCapable(n, -1)
				n.down = true
				res.NodesDown = append(res.NodesDown, id)
			}
		}
		slices.Sort(res.NodesDown)
	}
	return res
}

// ---- lease heap: leased tasks ordered by (deadline, token) ----

// leaseEntry is one leased task in State.leaseHeap, with copies of its
// lease's deadline and token so that sifting compares without chasing
// pointers (a large farm holds thousands of leases).
type leaseEntry struct {
	deadline int64
	token    uint64
	t        *task
}

func (a *leaseEntry) less(b *leaseEntry) bool {
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.token < b.token
}

func (s *State) leaseLess(i, j int) bool { return s.leaseHeap[i].less(&s.leaseHeap[j]) }

func (s *State) pushLease(t *task) {
	t.lIdx = int32(len(s.leaseHeap))
	s.leaseHeap = append(s.leaseHeap, leaseEntry{deadline: t.lease.deadline, token: t.lease.token, t: t})
	s.leaseUp(int(t.lIdx))
}

func (s *State) removeLease(t *task) {
	h := s.leaseHeap
	i, last := int(t.lIdx), len(h)-1
	if i != last {
		h[i] = h[last]
		h[i].t.lIdx = int32(i)
	}
	h[last] = leaseEntry{}
	s.leaseHeap = h[:last]
	if i != last && !s.leaseDown(i) {
		s.leaseUp(i)
	}
	t.lIdx = -1
}

// fixLease restores heap order after t's deadline changed.
func (s *State) fixLease(t *task) {
	s.leaseHeap[t.lIdx].deadline = t.lease.deadline
	if i := int(t.lIdx); !s.leaseDown(i) {
		s.leaseUp(i)
	}
}

// leaseUp and leaseDown move the entry at i with a hole: parents or
// children shift one step and the entry is written once, at its final
// index.
func (s *State) leaseUp(i int) {
	h := s.leaseHeap
	e := h[i]
	start := i
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(&h[p]) {
			break
		}
		h[i] = h[p]
		h[i].t.lIdx = int32(i)
		i = p
	}
	if i != start {
		h[i] = e
		e.t.lIdx = int32(i)
	}
}

func (s *State) leaseDown(i int) bool {
	h := s.leaseHeap
	e := h[i]
	start, n := i, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&e) {
			break
		}
		h[i] = h[m]
		h[i].t.lIdx = int32(i)
		i = m
	}
	if i != start {
		h[i] = e
		e.t.lIdx = int32(i)
	}
	return i > start
}

// ExpiryDue reports whether Expire(now) would change anything: a lease at or past
// its deadline, or a live node silent for NodeTimeout. It changes nothing, so the
// leader can ask it every second and propose Expire only when there is work.
func (s *State) ExpiryDue(now time.Time) bool {
	at := ms(now)
	if s.leaseDue(at) || s.retryDue(at) {
		return true
	}
	if s.cfg.NodeTimeout > 0 {
		limit := at - s.cfg.NodeTimeout.Milliseconds()
		for _, n := range s.nodes {
			if n.silent(limit) {
				return true
			}
		}
	}
	return false
}

// leaseDue reports whether the earliest lease deadline is at or before at.
func (s *State) leaseDue(at int64) bool {
	return len(s.leaseHeap) > 0 && s.leaseHeap[0].deadline <= at
}

// silent reports whether a live node's last heartbeat is at or before limit.
func (n *node) silent(limit int64) bool { return !n.down && n.lastHB <= limit }
