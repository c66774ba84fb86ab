package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errNoLeader: a follower that knows of no leader cannot tell how far the
// cluster has got, so it does not start a stream from its own state.
var errNoLeader = errors.New("no leader is known to this node")

// readBarrier is the event streams' read barrier (api.Config.ReadBarrier).
// The leader applies everything committed before it (a Raft barrier). A
// follower waits until it has taken in everything the leader last told it
// was committed: Raft hands those entries to the FSM in order, and a stream
// registers with the FSM before any later one applies, so none of their
// changes is lost to it. Either waits until the FSM has applied index, a
// client's Last-Event-ID, which another node may have applied a moment
// before this one. (Raft's barrier and no-op entries never reach the FSM,
// so the FSM's own applied index is compared only with event ids, which
// are indexes of commands.)
func (s *Server) readBarrier(ctx context.Context, index uint64) error {
	n := s.Node
	ready := func() bool { return n.FSM.AppliedIndex() >= index }
	if n.IsLeader() {
		if err := n.Barrier(ctx); err != nil {
			return err
		}
	} else {
		if id, _ := n.Leader(); id == "" {
			return errNoLeader
		}
		commit := n.Raft.CommitIndex()
		ready = func() bool { return n.Raft.AppliedIndex() >= commit && n.FSM.AppliedIndex() >= index }
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("apply through index %d (applied %d, Raft applied %d): %w", index, n.FSM.AppliedIndex(), n.Raft.AppliedIndex(), ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
