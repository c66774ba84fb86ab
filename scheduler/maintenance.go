package scheduler

import (
	"cmp"
	"slices"
	"time"
)

// Maintenance: an operator cordons a node so that it takes no new work,
// and when draining it, hands its leases back once the drain's deadline
// has passed. The deadline itself is the control plane's (it proposes the
// hand-back); the scheduler only knows the mark and the hand-back.

// SetCordoned marks a node cordoned (no new work; its leases run on) or
// lifts the mark. Unlike Node.Draining, which the agent reports with
// every heartbeat, the mark stays until lifted here, also when the node
// registers again (UpsertNode). Lifting it makes the node a candidate
// again at once, also for tasks waiting out a retry backoff that it
// could run (as a node registering would).
func (s *State) SetCordoned(nodeID string, cordoned bool, now time.Time) error {
	n, err := s.node(nodeID)
	if err != nil {
		return err
	}
	if n.cordoned == cordoned {
		return nil
	}
	s.countCapable(n, -1)
	n.cordoned = cordoned
	s.countCapable(n, +1)
	if !cordoned {
		s.releaseFor(n, ms(now))
	}
	return nil
}

// HandBack revokes every lease the node holds and requeues their tasks
// without counting a failure (the operator took the node away; the task
// did not fail): a task's failures and failed nodes are unchanged, so the
// node may run it again later. The revoked leases are returned by token;
// a later report from the node about one of them is stale (ErrStaleLease).
func (s *State) HandBack(nodeID string, now time.Time) ([]Lease, error) {
	n, err := s.node(nodeID)
	if err != nil {
		return nil, err
	}
	return s.handBack(n, ms(now)), nil
}

func (s *State) handBack(n *node, now int64) []Lease {
	held := slices.Clone(n.leased)
	slices.SortFunc(held, func(a, b *task) int { return cmp.Compare(a.lease.token, b.lease.token) })
	out := make([]Lease, 0, len(held))
	for _, t := range held {
		out = append(out, t.leaseInfo())
		s.releaseLease(t)
		s.makeReady(t, now)
	}
	return out
}

// NodeLeases returns the leases a node holds, by token (none for an
// unknown node): what an operator waits for while the node drains.
func (s *State) NodeLeases(nodeID string) []Lease {
	n, ok := s.nodes[nodeID]
	if !ok {
		return nil
	}
	out := make([]Lease, 0, len(n.leased))
	for _, t := range n.leased {
		out = append(out, t.leaseInfo())
	}
	slices.SortFunc(out, func(a, b Lease) int { return cmp.Compare(a.Token, b.Token) })
	return out
}
