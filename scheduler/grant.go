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

	t     *task
	state *State
}

// PlaceGrant is Place for in-process drivers: the same placement, answered
// as a Grant.
func (s *State) PlaceGrant(nodeID string, now time.Time, dur time.Duration) (Grant, error) {
	t, err := s.place(nodeID, now, dur)
	if err != nil {
		return Grant{}, err
	}
	r := &t.cls.req
	return Grant{
		Ref:     t.leaseRef(),
		VideoID: t.v.id,
		Kind:    t.kind,
		GPUs:    r.GPUs, CPUSlots: r.CPUSlots, Model: r.Model,
		t: t, state: s,
	}, nil
}

// CompleteGrant is Complete for a Grant from PlaceGrant. While the grant's
// lease is the current one it goes straight to its task; otherwise (a
// grant of another State, a lease that ended) it is Complete of g.Ref,
// with the same answers.
func (s *State) CompleteGrant(g Grant, now time.Time) (Outcome, error) {
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
