package scheduler

import (
	"fmt"
	"time"
)

// Grant is a lease as an in-process driver that runs many of them (the
// farm simulator) needs it: what Lease says about the task and its
// requirements, without the copies Lease makes (GPU ids, tools, times),
// and with a handle that lets CompleteGrant find the task without looking
// its id up. It is only good for the State that granted it.
type Grant struct {
	Ref      LeaseRef
	VideoID  string
	Kind     Kind
	GPUs     int    // Requirements.GPUs
	CPUSlots int    // Requirements.CPUSlots
	Model    string // Requirements.Model
	// VideoSeq numbers the task's video in the order of submission to
	// the State, from 1 (a restored State keeps the numbers): a driver
	// that submits in its own order finds its record of the video by it.
	VideoSeq uint64

	t     *task
	state *State
}

// NodeRef names a node for PlaceGrant without a lookup by id on every
// call. It stays good while the node is registered; once the node is
// removed (or for another State) PlaceGrant looks its id up, as Place
// would.
type NodeRef struct {
	id    string
	n     *node
	state *State
}

// NodeRef returns the handle of registered node id.
func (s *State) NodeRef(id string) (NodeRef, error) {
	n, err := s.node(id)
	if err != nil {
		return NodeRef{}, err
	}
	return NodeRef{id: id, n: n, state: s}, nil
}

// ID is the node's id.
func (r NodeRef) ID() string { return r.id }

// PlaceGrant is Place for in-process drivers: the same placement, written
// into *g (a driver keeps its grants in its own records, so a grant is
// not copied on its way there).
func (s *State) PlaceGrant(node NodeRef, now time.Time, dur time.Duration, g *Grant) error {
	d, err := leaseMS(dur)
	if err != nil {
		return err
	}
	n := node.n
	if node.state != s || n == nil || n.removed {
		if n, err = s.node(node.id); err != nil {
			return err
		}
	}
	t, err := s.placeOn(n, ms(now), d)
	if err != nil {
		return err
	}
	r := &t.cls.req
	*g = Grant{
		Ref:     t.leaseRef(),
		VideoID: t.v.id,
		Kind:    t.kind,
		GPUs:    r.GPUs, CPUSlots: r.CPUSlots, Model: r.Model,
		VideoSeq: t.v.seq,
		t:        t, state: s,
	}
	return nil
}

// CompleteGrant is Complete for a Grant from PlaceGrant. While the grant's
// lease is the current one it goes straight to its task; otherwise (a
// grant of another State, a lease that ended) it is Complete of g.Ref,
// with the same answers.
func (s *State) CompleteGrant(g *Grant, now time.Time) (Outcome, error) {
	if t := g.t; g.state == s && t.lease != nil && t.lease.token == g.Ref.Token &&
		t.lease.node.spec.ID == g.Ref.NodeID && t.id == g.Ref.TaskID {
		return s.complete(t, g.Ref, now), nil
	}
	out, err := s.Complete(g.Ref, now)
	if err != nil {
		return out, fmt.Errorf("complete grant: %w", err)
	}
	return out, nil
}
