package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestAdminRemoveRenderNode: an operator forgets a render node. One that is
// not down is refused unless forced (its agent would register again); once
// removed, the node is gone from the list, its agent's credential is no
// longer known, and the task it held is back in the queue for another node,
// not failed.
func TestAdminRemoveRenderNode(t *testing.T) {
	t.Parallel()
	h := start(t, withAgent(30*time.Second))
	ctx := context.Background()
	gone := h.registerNode("gone")
	_, key := h.account("pro", 100)
	id := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	held := h.leaseTask(gone, 5)

	var ae *apierr.Error
	if _, err := h.admin.RemoveRenderNode(ctx, "gone", false); !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != apierr.CodeNodeNotDown {
		t.Fatalf("removing a node that is not down: %v, want 409 node_not_down", err)
	}
	h.adminNode("gone") // still listed
	out, err := h.admin.RemoveRenderNode(ctx, "gone", true)
	if err != nil || out.Name != "gone" || out.WasDown || out.Requeued != 1 {
		t.Fatalf("forced removal: %+v, %v", out, err)
	}
	nodes, err := h.admin.Nodes(ctx)
	if err != nil || len(nodes) != 0 {
		t.Fatalf("nodes after the removal: %+v, %v", nodes, err)
	}
	if r := h.agentCall("POST", "/agent/v1/heartbeat", gone, wire.HeartbeatRequest{Leases: []wire.LeaseReport{}}); r.Status != http.StatusUnauthorized {
		t.Fatalf("the removed node's heartbeat: %d %s", r.Status, r.Body)
	}
	again := h.leaseTask(h.registerNode("other"), 5)
	if again.TaskID != held.TaskID {
		t.Fatalf("the other node leased %s, want the removed node's %s back", again.TaskID, held.TaskID)
	}
	if st := expectAPIStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), http.StatusOK)["status"]; st == "failed" {
		t.Fatalf("the video failed with its node removed")
	}
	if _, err := h.admin.RemoveRenderNode(ctx, "gone", true); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("removing it again: %v, want 404", err)
	}
}
