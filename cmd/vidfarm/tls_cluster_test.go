package main

import (
	"context"
	"crypto/tls"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTLSCluster: three nodes with https listeners and Raft over mutual TLS
// elect a leader, a follower forwards a write to the leader over https, and
// a node whose Raft certificate another CA signed can neither join nor talk
// Raft to a member, and the logs on both sides say why.
func TestTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers")
	}
	ca := newTestCA(t, "farm")
	n1 := startTLSNode(t, "n1", ca)
	n2 := startTLSNode(t, "n2", ca, "--join", n1.adminURL)
	n3 := startTLSNode(t, "n3", ca, "--join", n2.adminURL) // a follower forwards the join
	ctx := context.Background()
	members, err := n3.cl.ClusterMembers(ctx)
	if err != nil || len(members.Members) != 3 {
		t.Fatalf("members seen by n3: %+v %v, want 3", members, err)
	}
	byID := map[string]*tlsNode{"n1": n1, "n2": n2, "n3": n3}
	leader := byID[members.Leader]
	if leader == nil {
		t.Fatalf("no leader among the members: %+v", members)
	}
	var follower *tlsNode
	for _, n := range byID {
		if n != leader {
			follower = n
		}
	}
	acct, err := follower.cl.CreateAccount(ctx, "through-a-follower", "pro", 7)
	if err != nil {
		t.Fatalf("write through follower %s: %v", follower.id, err)
	}
	if len(findLogs(follower.proc, "forward to leader failed")) > 0 {
		t.Fatalf("follower %s could not forward:\n%s", follower.id, follower.stderr)
	}
	for _, n := range []*tlsNode{n1, n2, n3} {
		eventually(t, 30*time.Second, "account replicated to "+n.id, func() bool {
			a, err := n.cl.Account(ctx, acct.AccountID)
			return err == nil && a.Credits == 7
		})
	}

	// A peer with a Raft certificate from another CA: its listeners use the
	// farm's certificate, so only Raft can tell it apart.
	rogue := newTestCA(t, "rogue")
	args := tlsServerArgs(t, "n4", ca, rogue, "--join", n1.adminURL)
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, vidfarmBinary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "cannot talk Raft") || !strings.Contains(string(out), "unknown authority") {
		t.Fatalf("rogue node: %v, want it refused with the reason:\n%s", err, out)
	}
	if len(findLogs(leader.proc, "add voter failed", "node_id", "n4")) == 0 {
		t.Fatalf("the leader logged no refusal of n4:\n%s", tail(leader.stderr.String(), 20))
	}
	if members, err := n1.cl.ClusterMembers(ctx); err != nil || len(members.Members) != 3 {
		t.Fatalf("members after the refused join: %+v %v, want still 3", members, err)
	}

	// Talking Raft directly with the rogue certificate: the member refuses
	// the handshake and logs who tried.
	rcert, rkey := rogue.issue("intruder")
	kp, err := tls.LoadX509KeyPair(rcert, rkey)
	if err != nil {
		t.Fatal(err)
	}
	// In TLS 1.3 the client's handshake ends before the server has checked
	// the client's certificate: the refusal arrives on the first read.
	conn, err := tls.Dial("tcp", n1.raft, &tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatalf("dial n1's raft listener: %v", err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	local := conn.LocalAddr().String()
	conn.Close()
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("raft with a rogue certificate: read %v, want the handshake refused", err)
	}
	eventually(t, 10*time.Second, "n1 logs the refused raft peer", func() bool {
		return len(findLogs(n1.proc, "raft peer refused: TLS handshake failed (peers need a certificate signed by --raft-tls-ca)", "peer", local)) > 0
	})
	if _, err := follower.cl.CreateAccount(ctx, "after-the-rogue", "pro", 1); err != nil {
		t.Fatalf("cluster stopped taking writes after the rogue: %v", err)
	}
}
