package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestClusterAddVoterRefusesAMistypedNode is the audit's case: `cluster add`
// of a node that does not exist takes (a nonvoter dials nothing), and the
// same with --voter must not make it a voter the cluster would wait for.
// A real node joining with --join is still promoted.
func TestClusterAddVoterRefusesAMistypedNode(t *testing.T) {
	ctx := context.Background()
	n1 := start(t, func(c *server.Config) { c.NodeID = "n1" })
	dead := "http://" + closedAddr(t)
	req := cluster.JoinRequest{ID: "typo1", RaftAddr: closedAddr(t), PublicURL: dead, AdminURL: dead, AgentURL: dead, Stage: cluster.StageNonvoter}
	if _, err := n1.admin.AddNode(ctx, req); err != nil {
		t.Fatalf("cluster add (nonvoter): %v", err)
	}
	req.Stage = cluster.StageVoter
	var ae *apierr.Error
	if _, err := n1.admin.AddNode(ctx, req); !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Details["reason"] != "node_unreachable" {
		t.Fatalf("cluster add --voter of a node that does not exist: %v, want 409 node_unreachable", err)
	}
	suffrage := func(h *harness) map[string]string {
		m, err := h.admin.ClusterMembers(ctx)
		if err != nil {
			t.Fatalf("cluster members: %v", err)
		}
		out := map[string]string{}
		for _, mm := range m.Members {
			out[mm.ID] = mm.Suffrage
		}
		return out
	}
	if s := suffrage(n1); s["typo1"] != "Nonvoter" || s["n1"] != "Voter" {
		t.Fatalf("after the refused promotion: %v, want typo1 still a nonvoter", s)
	}
	// The cluster still commits with its one voter.
	if _, err := n1.admin.CreateAccount(ctx, "after-typo", "pro", 1); err != nil {
		t.Fatalf("a write after the refused promotion: %v", err)
	}
	if _, err := n1.admin.RemoveNode(ctx, "typo1"); err != nil {
		t.Fatalf("cluster remove typo1: %v", err)
	}

	// A node that joins by itself asks to be a voter once caught up, and is.
	start(t, func(c *server.Config) { c.NodeID, c.Join = "n2", "http://"+n1.srv.AdminAddr() })
	waitShowing(t, "n2 is a voter", 20*time.Second, func() (bool, any) {
		s := suffrage(n1)
		return s["n2"] == "Voter" && len(s) == 2, s // typo1 stays removed
	})
}
