package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// TestRemoveTheLeader: removing the node that leads, through another
// member, answers once the removal is done (its member record goes while it
// still leads), the others elect a leader without it, and the removed node
// stops when asked: nothing waits for a commit it can no longer make.
func TestRemoveTheLeader(t *testing.T) {
	t.Parallel()
	nodes, leader := threeVoters(t)
	ctx := context.Background()
	var via *harness
	for id, h := range nodes {
		if id != leader {
			via = h
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitShowing(t, "the leader "+leader+" is removed", 30*time.Second, func() (bool, any) {
		out, err := via.admin.RemoveNode(rctx, leader)
		return err == nil, []any{out, err}
	})
	waitShowing(t, "two members and a new leader, without the removed node's record", 30*time.Second, func() (bool, any) {
		m, err := via.admin.ClusterMembers(ctx)
		if err != nil || len(m.Members) != 2 || m.Leader == "" || m.Leader == leader {
			return false, []any{m, err}
		}
		_, recorded := via.srv.Node.FSM.Member(leader)
		return !recorded, m
	})
	stopped := make(chan struct{})
	go func() {
		nodes[leader].stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(60 * time.Second): // a bound on a hang, not a wait for an event
		t.Fatalf("the removed node %s did not stop within 60 s", leader)
	}
}

// threeVoters starts n1 and joins n2 and n3 to it, waits until all three
// are voters and returns them by id with the leader's id.
func threeVoters(t *testing.T) (map[string]*harness, string) {
	t.Helper()
	return threeVotersNamed(t, "n1", "n2", "n3")
}

// threeVotersNamed is threeVoters with the nodes' ids, for tests that must
// tell their nodes from those of the other clusters in the process.
func threeVotersNamed(t *testing.T, id1, id2, id3 string) (map[string]*harness, string) {
	t.Helper()
	n1 := start(t, func(c *server.Config) { c.NodeID = id1 })
	join := "http://" + n1.srv.AdminAddr()
	n2 := start(t, func(c *server.Config) { c.NodeID, c.Join = id2, join })
	n3 := start(t, func(c *server.Config) { c.NodeID, c.Join = id3, join })
	nodes := map[string]*harness{id1: n1, id2: n2, id3: n3}
	var leader string
	waitShowing(t, "three voters", 30*time.Second, func() (bool, any) {
		m, err := n2.admin.ClusterMembers(context.Background())
		if err != nil || len(m.Members) != 3 || nodes[m.Leader] == nil {
			return false, []any{m, err}
		}
		for _, mm := range m.Members {
			if mm.Suffrage != "Voter" {
				return false, m
			}
		}
		leader = m.Leader
		return true, m
	})
	return nodes, leader
}
