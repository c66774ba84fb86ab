package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestChaosRecoverAfterQuorumLoss follows docs/cluster.md's "Losing the
// quorum" with real processes: two of three voters are SIGKILLed and never
// come back, the survivor is stopped, `vidfarm server … --recover-cluster`
// makes it the one voter of a new cluster, and started again as usual it
// leads with every acknowledged write and takes new ones. The command
// refuses to run beside the live node, and says what it did.
func TestChaosRecoverAfterQuorumLoss(t *testing.T) {
	t.Parallel()
	c := newChaosCluster(t, 3)
	c.startAll()
	leader := c.nodes[c.waitLeader(30*time.Second, c.up()...)]
	ctx := context.Background()
	acct, err := leader.adminClient().CreateAccount(ctx, "kept", "pro", 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.adminClient().GrantCredits(ctx, acct.AccountID, 7); err != nil {
		t.Fatal(err)
	}
	c.waitSameApplied(30 * time.Second)

	recoverArgs := append(c.serverArgs(0), "--recover-cluster")
	if out, err := exec.Command(vidfarmBinary(t), recoverArgs...).CombinedOutput(); err == nil || !strings.Contains(string(out), "locked by another process") {
		t.Fatalf("--recover-cluster beside the running node: %v\n%s", err, out)
	}
	c.kill(1)
	c.kill(2)
	c.kill(0)
	out, err := exec.Command(vidfarmBinary(t), recoverArgs...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "recovered: node n1") || !strings.Contains(string(out), "never start n2, n3 again") {
		t.Fatalf("--recover-cluster: %v\n%s", err, out)
	}

	c.start(0)
	c.waitLeader(30*time.Second, c.nodes[0])
	cl := c.nodes[0].adminClient()
	m, err := c.members(c.nodes[0])
	if err != nil || len(m.Members) != 1 || m.Leader != "n1" {
		t.Fatalf("members after recovery: %+v %v", m, err)
	}
	if a, err := cl.Account(ctx, acct.AccountID); err != nil || a.Credits != 507 {
		t.Fatalf("account after recovery: %+v %v, want 507 credits", a, err)
	}
	eventually(t, 30*time.Second, "a write after recovery", func() bool {
		_, err := cl.GrantCredits(ctx, acct.AccountID, 1)
		return err == nil
	})
}
