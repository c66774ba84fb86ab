package server_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// TestRecoverAfterQuorumLoss: two of three voters are lost with their
// disks. The survivor, recovered (server.Recover) and started as usual,
// leads alone with everything it held, forgets the lost members' records,
// takes writes, and a new node joins it. A data directory with no Raft
// state is refused, and so is a running node's.
func TestRecoverAfterQuorumLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The survivor restarts on the Raft address it recovers at.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ln.Addr().String()
	ln.Close()
	n1 := start(t, func(c *server.Config) { c.NodeID, c.RaftListen = "rq1", raftAddr })
	join := "http://" + n1.srv.AdminAddr()
	n2 := start(t, func(c *server.Config) { c.NodeID, c.Join = "rq2", join })
	n3 := start(t, func(c *server.Config) { c.NodeID, c.Join = "rq3", join })
	waitShowing(t, "three voters", 30*time.Second, func() (bool, any) {
		m, err := n1.admin.ClusterMembers(ctx)
		return err == nil && len(m.Members) == 3 && m.Members[0].Suffrage == "Voter" && m.Members[1].Suffrage == "Voter" && m.Members[2].Suffrage == "Voter", []any{m, err}
	})
	var acct admin.CreatedAccount
	waitShowing(t, "an account is created", 30*time.Second, func() (bool, any) {
		acct, err = n1.admin.CreateAccount(ctx, "survives", "pro", 1234)
		return err == nil, err
	})
	if _, err := n1.admin.GrantCredits(ctx, acct.AccountID, 11); err != nil {
		t.Fatal(err)
	}
	// While it runs, its data directory is locked.
	if _, err := server.Recover(n1.cfg); err == nil {
		t.Fatal("recovered a running node")
	}

	survivor := n1.cfg
	n2.stop()
	n3.stop()
	n1.stop()

	rec, err := server.Recover(survivor)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if len(rec.Previous) != 3 || rec.Address != raftAddr || rec.Index == 0 {
		t.Fatalf("recovery %+v", rec)
	}
	r := start(t, func(c *server.Config) { *c = survivor })
	waitShowing(t, "the survivor leads alone", 30*time.Second, func() (bool, any) {
		m, err := r.admin.ClusterMembers(ctx)
		return err == nil && m.Leader == "rq1" && len(m.Members) == 1, []any{m, err}
	})
	if got, err := r.admin.Account(ctx, acct.AccountID); err != nil || got.Credits != 1245 {
		t.Fatalf("account after recovery: %+v %v, want 1245 credits", got, err)
	}
	waitShowing(t, "the lost members' records are forgotten", 30*time.Second, func() (bool, any) {
		ms := r.srv.Node.FSM.Members()
		return len(ms) == 1 && ms[0].ID == "rq1", ms
	})
	if _, err := r.admin.GrantCredits(ctx, acct.AccountID, 1); err != nil {
		t.Fatalf("a write after recovery: %v", err)
	}
	n4 := start(t, func(c *server.Config) { c.NodeID, c.Join = "rq4", "http://"+r.srv.AdminAddr() })
	waitShowing(t, "a new node joins the survivor", 30*time.Second, func() (bool, any) {
		m, err := r.admin.ClusterMembers(ctx)
		return err == nil && len(m.Members) == 2 && m.Members[1].Suffrage == "Voter", []any{m, err}
	})
	waitShowing(t, "the new node has the account", 30*time.Second, func() (bool, any) {
		a, ok := n4.srv.Node.FSM.Account(acct.AccountID)
		return ok && a.Credits == 1246, a
	})

	empty := survivor
	empty.DataDir, empty.NodeID = t.TempDir(), "rq5"
	if _, err := server.Recover(empty); !errors.Is(err, raftnode.ErrNothingToRecover) {
		t.Fatalf("recover an empty data directory: %v", err)
	}
}
