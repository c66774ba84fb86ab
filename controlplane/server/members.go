package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// self is this node's member record as it should stand in the state: its
// addresses and what its binary understands.
func (s *Server) self() fsm.Member {
	return fsm.Member{ID: s.cfg.NodeID, RaftAddr: s.Node.RaftAddr(), PublicURL: s.cfg.PublicURL,
		AdminURL: s.cfg.AdminURL, AgentURL: s.cfg.AgentURL, Understands: fsm.Understood()}
}

func joinRequest(m fsm.Member) cluster.JoinRequest {
	return cluster.JoinRequest{ID: m.ID, RaftAddr: m.RaftAddr, PublicURL: m.PublicURL, AdminURL: m.AdminURL,
		AgentURL: m.AgentURL, Understands: uint8(m.Understands)}
}

// recorded says whether the state holds this node's record as self() has it.
func (s *Server) recorded() (fsm.Member, bool) {
	want := s.self()
	have, ok := s.Node.FSM.Member(want.ID)
	have.Updated = 0
	return want, ok && have == want
}

// publishSelf records this node's addresses and level in the FSM once it
// leads, so that followers know where to forward and the upgrade gate what
// it understands; it writes only when they changed.
func (s *Server) publishSelf(ctx context.Context) {
	want, same := s.recorded()
	if same {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Node.Apply(actx, &fsm.SetMember{Member: want, Now: time.Now().UnixNano()}); err != nil && ctx.Err() == nil {
		s.log.Warn("publish this node's addresses", "err", err)
	}
}

// forgetLostMembers drops, on the leader, the member records of nodes that
// are no longer in the Raft configuration: what a recovery (Recover) leaves
// of the members it dropped, and a removal whose second step did not
// commit. Such a record would keep its node in `cluster members`, where
// `cluster remove` cannot reach it (it removes servers of the
// configuration), and its level in the upgrade gate's minimum. A joining
// node is in the configuration before its record is written, so no live
// member is ever forgotten.
func (s *Server) forgetLostMembers(ctx context.Context) {
	members := s.Node.FSM.Members()
	if len(members) <= 1 {
		return
	}
	servers, err := s.Node.Servers()
	if err != nil {
		return
	}
	in := make(map[string]bool, len(servers))
	for _, sv := range servers {
		in[sv.ID] = true
	}
	for _, m := range members {
		if in[m.ID] {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := s.Node.Apply(actx, &fsm.RemoveMember{ID: m.ID, Now: time.Now().UnixNano()})
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("forget a member no longer in the raft configuration", "node_id", m.ID, "err", err)
			}
			return
		}
		s.log.Warn("forgot a member no longer in the raft configuration", "node_id", m.ID, "raft_addr", m.RaftAddr)
	}
}

// reportInterval is how often a follower compares its record in the state
// with itself; maxReportBackoff bounds the wait between reports that did
// not make the record right.
const (
	reportInterval   = time.Second
	maxReportBackoff = time.Minute
)

// reportSelf keeps a follower's record true: a node restarted on a newer
// binary (or with other URLs) tells the leader (PUT
// /admin/v1/cluster/members/{id}), which proposes SetMember. That is how
// every member's level reaches the state, not only the leader's, and what
// lets the leader use a new command type once the last member is upgraded.
// It runs once the node has joined (the join records it), so a node with no
// record lost it to a restored backup, or was removed (the leader refuses a
// server not in the configuration). A leader whose own record has no level
// runs a release from before levels and would not record one: the node
// waits for a newer leader. Reports that do not take back off up to
// maxReportBackoff.
func (s *Server) reportSelf(ctx context.Context) {
	t := time.NewTicker(reportInterval)
	defer t.Stop()
	var backoff time.Duration
	var next time.Time
	// waitedFor is the pre-levels leader this node last said it waits for,
	// so the wait is logged once per leader, not every second.
	var waitedFor string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.Node.IsLeader() || time.Now().Before(next) {
			continue
		}
		want, same := s.recorded()
		if same {
			backoff = 0
			continue
		}
		leaderID, _ := s.Node.Leader()
		leader, ok := s.Node.FSM.Member(leaderID)
		if ok && leader.Understands == 0 && waitedFor != leaderID {
			// An operator following the upgrade runbook waits for this
			// node's level in `cluster members`; say why it will not come.
			waitedFor = leaderID
			s.log.Info("the leader runs a release from before command levels: this node's level is recorded once the leader is upgraded",
				"leader_id", leaderID, "understands", want.Understands)
		}
		if leaderID == "" || !ok || leader.Understands == 0 || leader.AdminURL == "" {
			continue
		}
		backoff = min(max(2*backoff, reportInterval), maxReportBackoff)
		next = time.Now().Add(backoff)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := cluster.Report(rctx, leader.AdminURL, s.cfg.AdminToken, joinRequest(want), s.tls.client)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.Warn("report this node's record to the leader", "leader_id", leaderID, "understands", uint8(want.Understands), "err", err,
				"retry_in", backoff.String())
		default:
			s.log.Info("reported this node's record to the leader", "leader_id", leaderID, "understands", uint8(want.Understands))
		}
	}
}

// clusterLevel is the highest command type every server of the
// configuration understands; 0 when it cannot be told.
func (s *Server) clusterLevel() fsm.MessageType {
	levels, err := s.Node.Levels()
	if err != nil {
		return 0
	}
	return fsm.LowestLevel(levels)
}

// gated reports whether err is the upgrade gate's refusal of a leader job's
// command (raftnode.ErrNotUnderstood) and, if so, logs that the job is
// skipped until the members named are upgraded; it runs again on its own
// schedule and as soon as the cluster's level rises.
func (s *Server) gated(job string, err error) bool {
	var nu *raftnode.NotUnderstoodError
	if !errors.As(err, &nu) {
		return false
	}
	s.log.Warn("leader job skipped: a member does not understand its command yet", "job", job,
		"command", nu.Type.String(), "command_type", uint8(nu.Type), "members", nu.IDs(), "detail", nu.Describe())
	return true
}

// checkLevel refuses a data directory whose cluster every member had
// upgraded past this binary: its log may hold commands this binary cannot
// apply, and it would stop on the first with a panic. Until the last
// member was upgraded a rollback is safe, and this passes.
func checkLevel(f *fsm.FSM) error {
	if lvl := f.RecordedLevel(); lvl > fsm.Understood() {
		return fmt.Errorf("this data directory's cluster has used commands up to %s (type %d), which this binary cannot apply (it understands up to %s, type %d): "+
			"a newer release wrote it; start that release (a rollback is safe only until every member runs the newer one, deploy/OPERATIONS.md)",
			lvl, uint8(lvl), fsm.Understood(), uint8(fsm.Understood()))
	}
	return nil
}
