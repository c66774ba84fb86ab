package fsm

import (
	"fmt"
	"slices"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Node maintenance: an operator cordons a node (it takes no new work),
// drains it (cordons it, lets its running tasks finish, and hands back to
// the queue whatever still runs at a deadline) or uncordons it. The mark
// lives in two places that change together in one apply: the scheduler's
// cordon (what placement obeys, scheduler.State.SetCordoned) and the
// node's Maintenance record here (what the operator and the agent are
// shown: since when, until when, why). Both travel in the hot stream of
// every snapshot and state file (the node and scheduler records), so the
// mark survives restarts and leader changes.

// The maintenance states of a node. A node without a Maintenance record is
// active.
const (
	MaintenanceCordoned = "cordoned"
	MaintenanceDraining = "draining"
)

// Maintenance is an operator's mark on a node. Values are replaced, never
// changed in place: reads share them.
type Maintenance struct {
	State string `msgpack:"state"`
	// Since is when the node was first cordoned or drained (leader's
	// clock, unix ns); cordoning a draining node or draining a cordoned
	// one keeps it, and the reason too unless the command gives one.
	Since int64 `msgpack:"since"`
	// Deadline (draining only) is when the leader hands back the leases
	// the node still holds (HandBackDrained), unix ns.
	Deadline int64  `msgpack:"deadline,omitempty"`
	Reason   string `msgpack:"reason,omitempty"`
}

// CordonNode stops placing work on a node; its running tasks go on. On a
// draining node it cancels the drain's deadline.
type CordonNode struct {
	NodeID string `msgpack:"node"`
	Reason string `msgpack:"reason,omitempty"`
	Now    int64  `msgpack:"now"`
}

// DrainNode cordons a node and sets the deadline (leader's clock plus the
// operator's timeout, unix ns) after which the tasks it still runs are
// handed back to the queue. Draining a draining node moves its deadline.
type DrainNode struct {
	NodeID   string `msgpack:"node"`
	Deadline int64  `msgpack:"deadline"`
	Reason   string `msgpack:"reason,omitempty"`
	Now      int64  `msgpack:"now"`
}

// UncordonNode lifts a node's cordon or drain.
type UncordonNode struct {
	NodeID string `msgpack:"node"`
	Now    int64  `msgpack:"now"`
}

// HandBackDrained hands back the leases of every draining node whose
// deadline is at or before Now, requeuing their tasks without counting a
// failure. The leader proposes it (server job) when FSM.HandBackDue says
// there is one.
type HandBackDrained struct {
	Now int64 `msgpack:"now"`
}

// HandBackResult is what HandBackDrained did: the leases it ended, in
// node id then token order.
type HandBackResult struct {
	Leases []scheduler.Lease
}

func (CordonNode) Type() MessageType      { return CordonNodeType }
func (DrainNode) Type() MessageType       { return DrainNodeType }
func (UncordonNode) Type() MessageType    { return UncordonNodeType }
func (HandBackDrained) Type() MessageType { return HandBackDrainedType }

// setMaintenance records m (nil: active) on node id, in the scheduler and
// in the node's record.
func (s *state) setMaintenance(id string, m *Maintenance, now int64) (Node, error) {
	n, ok := s.nodes[id]
	if !ok {
		return Node{}, fmt.Errorf("node %s: %w", id, scheduler.ErrUnknownNode)
	}
	if err := s.sched.SetCordoned(id, m != nil, timeOf(now)); err != nil {
		return Node{}, fmt.Errorf("node %s: %w", id, err)
	}
	cp := *n
	cp.Maintenance = m
	s.nodes[id] = &cp // readers may hold the old record's copy: replace, never write
	return cp, nil
}

// mark is node id's next mark in state: it keeps the current mark's since
// (or starts now) and its reason unless a new one is given.
func (s *state) mark(id, state, reason string, now int64) *Maintenance {
	m := &Maintenance{State: state, Since: now, Reason: reason}
	if n, ok := s.nodes[id]; ok && n.Maintenance != nil {
		m.Since = n.Maintenance.Since
		if reason == "" {
			m.Reason = n.Maintenance.Reason
		}
	}
	return m
}

func (s *state) applyCordonNode(c *CordonNode) (Node, error) {
	return s.setMaintenance(c.NodeID, s.mark(c.NodeID, MaintenanceCordoned, c.Reason, c.Now), c.Now)
}

func (s *state) applyDrainNode(c *DrainNode) (Node, error) {
	if c.Deadline < c.Now {
		return Node{}, fmt.Errorf("%w: drain deadline %d is before now %d", ErrInvalidCommand, c.Deadline, c.Now)
	}
	m := s.mark(c.NodeID, MaintenanceDraining, c.Reason, c.Now)
	m.Deadline = c.Deadline
	return s.setMaintenance(c.NodeID, m, c.Now)
}

func (s *state) applyUncordonNode(c *UncordonNode) (Node, error) {
	return s.setMaintenance(c.NodeID, nil, c.Now)
}

// dueDrains lists the draining nodes whose deadline is at or before now and
// that still hold leases, by id.
func (s *state) dueDrains(now int64) []string {
	var due []string
	for id, n := range s.nodes {
		if m := n.Maintenance; m != nil && m.State == MaintenanceDraining && m.Deadline <= now {
			if info, ok := s.sched.Node(id); ok && info.Leases > 0 {
				due = append(due, id)
			}
		}
	}
	slices.Sort(due) // hand-back order decides requeue order: keep it replica-independent
	return due
}

func (s *state) applyHandBackDrained(c *HandBackDrained) (HandBackResult, error) {
	var res HandBackResult
	for _, id := range s.dueDrains(c.Now) {
		back, err := s.sched.HandBack(id, timeOf(c.Now))
		if err != nil {
			return HandBackResult{}, fmt.Errorf("hand back the leases of node %s: %w", id, err)
		}
		res.Leases = append(res.Leases, back...)
	}
	return res, nil
}

// inherited is the operator's mark a node registering as id under name
// keeps: its own record's, else that of a node of the same name it
// replaces (the first by id), so that an agent restarting during
// maintenance stays cordoned or draining. Read before the registration
// changes anything.
func (s *state) inherited(id, name string) *Maintenance {
	if old, ok := s.nodes[id]; ok && old.Maintenance != nil {
		return old.Maintenance
	}
	var ids []string
	for other, n := range s.nodes {
		if n.Name == name && n.Maintenance != nil && other != id {
			ids = append(ids, other)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return s.nodes[slices.Min(ids)].Maintenance
}

// HandBackDue reports whether a HandBackDrained at now would hand back a
// lease; the leader's job proposes it only then.
func (f *FSM) HandBackDue(now int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.dueDrains(now)) > 0
}

// Node returns the registered node with id.
func (f *FSM) Node(id string) (Node, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.s.nodes[id]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// NodeLeases returns the leases node id holds, by token.
func (f *FSM) NodeLeases(id string) []scheduler.Lease {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.sched.NodeLeases(id)
}
