package scheduler

import (
	"cmp"
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
}

// Expire ends every lease whose deadline is at or before now, counting a
// failure of its task on its node (so a task whose nodes keep dying fails
// its video like one that keeps erroring), and marks down the nodes whose
// last heartbeat is Config.NodeTimeout old or older. The leader proposes it
// periodically with its own clock reading as now.
func (s *State) Expire(now time.Time) ExpireResult {
	at := ms(now)
	var res ExpireResult
	for s.leaseDue(at) {
		t := s.leaseHeap[0]
		res.Leases = append(res.Leases, t.leaseInfo())
		res.Expired = append(res.Expired, s.failAttempt(t, "lease expired", at))
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

func (s *State) leaseLess(i, j int) bool {
	a, b := s.leaseHeap[i].lease, s.leaseHeap[j].lease
	if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
		return c < 0
	}
	return a.token < b.token
}

func (s *State) leaseSwap(i, j int) {
	h := s.leaseHeap
	h[i], h[j] = h[j], h[i]
	h[i].lIdx = i
	h[j].lIdx = j
}

func (s *State) pushLease(t *task) {
	t.lIdx = len(s.leaseHeap)
	s.leaseHeap = append(s.leaseHeap, t)
	s.leaseUp(t.lIdx)
}

func (s *State) removeLease(t *task) {
	i, last := t.lIdx, len(s.leaseHeap)-1
	if i != last {
		s.leaseSwap(i, last)
	}
	s.leaseHeap[last] = nil
	s.leaseHeap = s.leaseHeap[:last]
	if i != last && !s.leaseDown(i) {
		s.leaseUp(i)
	}
	t.lIdx = -1
}

func (s *State) fixLease(t *task) {
	if !s.leaseDown(t.lIdx) {
		s.leaseUp(t.lIdx)
	}
}

func (s *State) leaseUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.leaseLess(i, p) {
			return
		}
		s.leaseSwap(i, p)
		i = p
	}
}

func (s *State) leaseDown(i int) bool {
	start, n := i, len(s.leaseHeap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.leaseLess(r, l) {
			m = r
		}
		if !s.leaseLess(m, i) {
			break
		}
		s.leaseSwap(i, m)
		i = m
	}
	return i > start
}

// ExpiryDue reports whether Expire(now) would change anything: a lease at or past
// its deadline, or a live node silent for NodeTimeout. It changes nothing, so the
// leader can ask it every second and propose Expire only when there is work.
func (s *State) ExpiryDue(now time.Time) bool {
	at := ms(now)
	if s.leaseDue(at) {
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
	return len(s.leaseHeap) > 0 && s.leaseHeap[0].lease.deadline <= at
}

// silent reports whether a live node's last heartbeat is at or before limit.
func (n *node) silent(limit int64) bool { return !n.down && n.lastHB <= limit }
