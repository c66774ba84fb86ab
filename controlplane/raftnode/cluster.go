package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// Server is one voter of the cluster as Raft's configuration lists it.
type Server struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Suffrage string `json:"suffrage"` // SuffrageVoter, or raft's name for another
}

// WatchLeader calls fn with the leader's id (empty while none is known)
// each time this node sees the leadership change, until ctx ends.
func (n *Node) WatchLeader(ctx context.Context, fn func(id string)) {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.Raft.RegisterObserver(obs)
	defer n.Raft.DeregisterObserver(obs)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			// Read now rather than from the observation: one dropped while
			// the channel was full is caught up by the next.
			id, _ := n.Leader()
			fn(id)
		}
	}
}

// SuffrageVoter is Server.Suffrage of a voter.
var SuffrageVoter = raft.Voter.String()

// Leader returns the current leader's server id and Raft address, empty when
// none is known (an election is running or this node is cut off).
func (n *Node) Leader() (id, addr string) {
	a, i := n.Raft.LeaderWithID()
	return string(i), string(a)
}

// HadState says whether the data directory held Raft state when the node opened:
// a node that did is already a member and must not join again.
func (n *Node) HadState() bool { return n.existing }

// ID is this node's server id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Removed reports whether this node has been removed from the cluster: its
// latest Raft configuration has members and it is not among them. Those
// members' ids are returned. The leader stops replicating to a node once
// the entry that removes it is appended, so the node may never learn that
// the entry committed: without this it waits for a leader for ever. A node
// that has not joined yet has an empty configuration and is not removed.
func (n *Node) Removed() (others []string, removed bool) {
	fut := n.Raft.GetConfiguration()
	if fut.Error() != nil {
		return nil, false
	}
	for _, s := range fut.Configuration().Servers {
		if string(s.ID) == n.cfg.NodeID {
			return nil, false
		}
		others = append(others, string(s.ID))
	}
	return others, len(others) > 0
}

// Servers returns the cluster configuration as Raft has it now.
func (n *Node) Servers() ([]Server, error) {
	fut := n.Raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	var out []Server
	for _, s := range fut.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), RaftAddr: string(s.Address), Suffrage: s.Suffrage.String()})
	}
	return out, nil
}

// ErrPeerRefused means a node asking to join cannot talk Raft with this one:
// over mutual TLS, the handshake with its Raft address failed (its
// certificate is not signed by the cluster's CA, or is not valid for the
// address it gave).
var ErrPeerRefused = errors.New("raft peer refused")

// AddVoter adds (or re-addresses, or promotes) a voting member. Only the
// leader can.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	return n.addServer(ctx, "add voter "+id, addr, func(timeout time.Duration) raft.IndexFuture {
		return n.Raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	})
}

// AddNonvoter adds a member that receives the log but does not count for a
// majority: a new node starts so, and is promoted with AddVoter once it has
// caught up. Added as a voter at once, a node that must first be sent a large
// snapshot would be part of every majority before it can acknowledge
// anything (in a cluster of one, two of two), and writes would stop until it
// had it.
func (n *Node) AddNonvoter(ctx context.Context, id, addr string) error {
	return n.addServer(ctx, "add nonvoter "+id, addr, func(timeout time.Duration) raft.IndexFuture {
		return n.Raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	})
}

// addServer changes the configuration to include addr. With mutual TLS the
// address is checked first, so a node whose certificate the cluster does not
// trust is refused instead of becoming a member nobody can reach.
func (n *Node) addServer(ctx context.Context, what, addr string, do func(time.Duration) raft.IndexFuture) error {
	if n.tls != nil {
		if err := n.tls.probe(ctx, addr); err != nil {
			return fmt.Errorf("%s: %w: %w", what, ErrPeerRefused, err)
		}
	}
	return n.membership(ctx, what, do)
}

// RemoveServer removes a member from the cluster. Only the leader can.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	return n.membership(ctx, "remove server "+id, func(timeout time.Duration) raft.IndexFuture {
		return n.Raft.RemoveServer(raft.ServerID(id), 0, timeout)
	})
}

func (n *Node) membership(ctx context.Context, what string, do func(time.Duration) raft.IndexFuture) error {
	timeout, err := waitBudget(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := do(timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("%s: %w: %w", what, ErrNotLeader, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// WaitReady blocks until the node can serve: a leader is known and this node's
// FSM has applied everything committed when it learnt so (when it leads itself,
// a barrier makes sure). A follower serves by forwarding to that leader.
//
// A restarted follower's commit index is 0 until the leader's first append
// carries the leader's (a heartbeat names the leader without it): ready
// then, it would answer its local reads (status, metrics) from the state it
// stopped with. So the commit index must have been heard.
func (n *Node) WaitReady(ctx context.Context) error {
	return n.wait(ctx, "wait until ready", func() bool {
		id, _ := n.Leader()
		return ready(id, n.FSM.AppliedIndex(), n.Raft.CommitIndex())
	})
}

// ready is WaitReady's condition.
func ready(leader string, applied, commit uint64) bool {
	return leader != "" && applied > 0 && commit > 0 && applied >= commit
}

// Restore replaces the cluster's state with a backup (a snapshot stream of
// size bytes). Raft installs it as a snapshot ahead of the current log and
// sends it to every follower; meant for disaster recovery into a new cluster.
//
// index is the Raft index the backup's state had applied (in the cluster it
// came from), which the FSM takes as its own once it restores it. Raft
// installs the snapshot after the greater of its own last index and that
// one, so the FSM's index stays below every entry that follows: given a
// lower index (the index of a node that has written little), Raft would
// install it below the FSM's, and a restart, resuming from the state file
// at the backup's index, would skip every entry written since up to it.
func (n *Node) Restore(ctx context.Context, r io.Reader, size int64, index uint64) error {
	timeout := 5 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Size: size, Index: index}
	if err := n.Raft.Restore(meta, r, timeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return fmt.Errorf("restore: %w: %w", ErrNotLeader, err)
		}
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// VerifyLeader confirms with a quorum that this node still leads (in a
// single-node cluster at once): a read barrier for reads served by the leader.
func (n *Node) VerifyLeader(ctx context.Context) error {
	fut := n.Raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("verify leadership: %w: %w", ErrNotLeader, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("verify leadership: %w", ctx.Err())
	}
}
