package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// TestDrainSurvivesLeaderChange: a node drained through one leader is still
// draining, with its since, deadline and reason, under the next; the new
// leader enforces the (moved) deadline and another node gets the task.
func TestDrainSurvivesLeaderChange(t *testing.T) {
	n1 := start(t, withAgent(time.Minute), func(c *server.Config) { c.NodeID = "n1" })
	join := "http://" + n1.srv.AdminAddr()
	n2 := start(t, withAgent(time.Minute), func(c *server.Config) { c.NodeID, c.Join = "n2", join })
	n3 := start(t, withAgent(time.Minute), func(c *server.Config) { c.NodeID, c.Join = "n3", join })
	nodes := map[string]*harness{"n1": n1, "n2": n2, "n3": n3}
	ctx := context.Background()
	var leader *harness
	waitShowing(t, "three voters", 30*time.Second, func() (bool, any) {
		m, err := n1.admin.ClusterMembers(ctx)
		if err != nil || nodes[m.Leader] == nil || len(m.Members) != 3 {
			return false, []any{m, err}
		}
		for _, mm := range m.Members {
			if mm.Suffrage != "Voter" {
				return false, m
			}
		}
		leader = nodes[m.Leader]
		return true, m
	})
	_, key := leader.account("pro", 1000)
	a := leader.registerNode("gpu-a")
	v := leader.create(key, manualReq("duration_seconds", 5))["id"].(string)
	render := leader.leaseTask(a, 5)
	drained, err := leader.admin.DrainNode(ctx, "gpu-a", 10*time.Minute, "rack move")
	if err != nil || drained.State != admin.NodeDraining {
		t.Fatalf("drain: %+v %v", drained, err)
	}

	leader.stop()
	delete(nodes, leader.cfg.NodeID)
	var next *harness
	for _, h := range nodes {
		waitShowing(t, h.cfg.NodeID+" sees a new leader", 30*time.Second, func() (bool, any) {
			m, err := h.admin.ClusterMembers(ctx)
			next = nodes[m.Leader]
			return err == nil && next != nil, []any{m, err}
		})
	}
	var n admin.NodeJSON
	waitShowing(t, "the new leader shows the drain", 30*time.Second, func() (bool, any) {
		n = next.adminNode("gpu-a")
		return n.State == admin.NodeDraining, n
	})
	if !n.MaintenanceSince.Equal(*drained.MaintenanceSince) || !n.DrainDeadline.Equal(*drained.DrainDeadline) ||
		n.MaintenanceReason != "rack move" || len(n.RunningTasks) != 1 || n.RunningTasks[0].TaskID != render.TaskID {
		t.Fatalf("after the leader change: %+v, before: %+v", n, drained)
	}
	waitShowing(t, "the deadline moved through the new leader", 30*time.Second, func() (bool, any) {
		n, err = next.admin.DrainNode(ctx, "gpu-a", 0, "")
		return err == nil, err
	})
	waitShowing(t, "the new leader hands the render back", 30*time.Second, func() (bool, any) {
		n = next.adminNode("gpu-a")
		return n.State == admin.NodeDrained, n
	})
	b := next.registerNode("gpu-b")
	if got := next.leaseTask(b, 10); got.TaskID != render.TaskID || got.Video.ID != v {
		t.Fatalf("node b got %+v, want the handed-back %s", got, render.TaskID)
	}
}
