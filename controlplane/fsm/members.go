package fsm

import (
	"fmt"
	"slices"
	"strings"
)

// Member is one control-plane node as the others need to know it: where its
// Raft, public, admin and agent listeners are, so that any node can forward a
// request to the leader's listener of the same kind, and which command types
// its binary understands, so that the leader proposes none it cannot apply
// (levels.go).
type Member struct {
	ID        string `msgpack:"id"`
	RaftAddr  string `msgpack:"raft"`
	PublicURL string `msgpack:"public"`
	AdminURL  string `msgpack:"admin"`
	AgentURL  string `msgpack:"agent"`
	Updated   int64  `msgpack:"updated"`
	// Understands is the highest command type the node's binary can apply
	// (its Understood()). Records written before it existed have none: see
	// Level and Baseline.
	Understands MessageType `msgpack:"understands,omitempty"`
}

// SetMember records (or updates) a node's addresses and level. The leader
// proposes it for a node that joins, for itself when it takes over, and for
// a member that reports a change (a node restarted on another binary).
type SetMember struct {
	Member Member `msgpack:"member"`
	Now    int64  `msgpack:"now"`
}

// RemoveMember forgets a node that left the cluster.
type RemoveMember struct {
	ID  string `msgpack:"id"`
	Now int64  `msgpack:"now"`
}

func (*SetMember) Type() MessageType    { return SetMemberType }
func (*RemoveMember) Type() MessageType { return RemoveMemberType }

func (s *state) applySetMember(c *SetMember) (Member, error) {
	m := c.Member
	if m.ID == "" || m.RaftAddr == "" {
		return Member{}, fmt.Errorf("%w: a member needs an id and a raft address", ErrInvalidCommand)
	}
	for _, u := range []string{m.PublicURL, m.AdminURL, m.AgentURL} {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return Member{}, fmt.Errorf("%w: member %s: %q is not an http(s) URL", ErrInvalidCommand, m.ID, u)
		}
	}
	m.Updated = c.Now
	s.members[m.ID] = &m
	return m, nil
}

func (s *state) applyRemoveMember(c *RemoveMember) (bool, error) {
	_, ok := s.members[c.ID]
	delete(s.members, c.ID)
	return ok, nil
}

// memberList is the members sorted by id; the caller holds a lock.
func (s *state) memberList() []Member {
	out := make([]Member, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Members returns the known control-plane nodes, sorted by id.
func (f *FSM) Members() []Member {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.memberList()
}

// Member returns one node's addresses.
func (f *FSM) Member(id string) (Member, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m, ok := f.s.members[id]
	if !ok {
		return Member{}, false
	}
	return *m, true
}
