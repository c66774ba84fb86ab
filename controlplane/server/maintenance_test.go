package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// heartbeat sends one heartbeat holding the given leases.
func (h *harness) heartbeat(cred string, held ...wire.Assignment) wire.HeartbeatResponse {
	h.t.Helper()
	req := wire.HeartbeatRequest{Leases: []wire.LeaseReport{}}
	for _, a := range held {
		req.Leases = append(req.Leases, wire.LeaseReport{TaskID: a.TaskID, Token: a.Token, Percent: 50})
	}
	r := h.agentCall("POST", "/agent/v1/heartbeat", cred, req)
	if r.Status != http.StatusOK {
		h.t.Fatalf("heartbeat: %d %s", r.Status, r.Body)
	}
	var out wire.HeartbeatResponse
	if err := json.Unmarshal(r.Body, &out); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// adminNode finds a node in the admin API's list by name.
func (h *harness) adminNode(name string) admin.NodeJSON {
	h.t.Helper()
	nodes, err := h.admin.Nodes(context.Background())
	if err != nil {
		h.t.Fatalf("list nodes: %v", err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	h.t.Fatalf("node %s not in %+v", name, nodes)
	return admin.NodeJSON{}
}

// TestNodeDrainThroughAdminAPI drains a node running two renders through
// the admin API: the one that finishes before the deadline is the node's,
// the other is handed back at the deadline and rendered by another node;
// each video is charged once. The agent hears of every change in its
// heartbeat answers; uncordoning gives the node work again.
func TestNodeDrainThroughAdminAPI(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	ctx := context.Background()
	_, key := h.account("pro", 1000)
	a := h.registerNode("gpu-a")
	v1 := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	v2 := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	r1, r2 := h.leaseTask(a, 5), h.leaseTask(a, 5)
	if r1.Video.ID != v1 || r2.Video.ID != v2 {
		t.Fatalf("leases %+v, %+v", r1, r2)
	}
	if n := h.adminNode("gpu-a"); n.State != admin.NodeActive || len(n.RunningTasks) != 2 || len(n.GPUs) != 2 || !n.GPUs[0].Busy {
		t.Fatalf("node before the drain: %+v", n)
	}

	n, err := h.admin.DrainNode(ctx, "gpu-a", 10*time.Minute, "kernel update")
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n.State != admin.NodeDraining || n.DrainDeadline == nil || n.MaintenanceSince == nil || n.MaintenanceReason != "kernel update" ||
		n.DrainDeadline.Sub(*n.MaintenanceSince) != 10*time.Minute || len(n.RunningTasks) != 2 {
		t.Fatalf("drained node: %+v", n)
	}
	hb := h.heartbeat(a, r1, r2)
	if hb.Maintenance != wire.NodeDraining || hb.DrainDeadline == nil || !hb.DrainDeadline.Equal(*n.DrainDeadline) || len(hb.Stale) != 0 {
		t.Fatalf("heartbeat answer while draining: %+v", hb)
	}
	if r := h.agentCall("POST", "/agent/v1/lease?wait=0", a, nil); r.Status != http.StatusNoContent {
		t.Fatalf("a draining node's lease poll: %d %s", r.Status, r.Body)
	}
	h.runTask(a, r1, "clip.mp4") // finishes before the deadline: the node's work stands

	// Draining again with no time left moves the deadline to now: the
	// leader's job hands the other render back.
	since := *n.MaintenanceSince
	if n, err = h.admin.DrainNode(ctx, n.ID, 0, ""); err != nil || !n.MaintenanceSince.Equal(since) || !n.DrainDeadline.After(since) ||
		n.MaintenanceReason != "kernel update" {
		t.Fatalf("drain again: %+v %v", n, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for h.adminNode("gpu-a").State != admin.NodeDrained {
		if time.Now().After(deadline) {
			t.Fatalf("the render was not handed back: %+v", h.adminNode("gpu-a"))
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	if m := h.adminGet("/metrics"); !strings.Contains(m, `vidfarm_render_nodes_maintenance{state="drained"} 1`) ||
		!strings.Contains(m, `vidfarm_render_nodes_maintenance{state="active"} 0`) {
		t.Fatalf("maintenance gauge with gpu-a drained:\n%s", grepLines(m, "vidfarm_render_nodes_maintenance"))
	}
	if hb := h.heartbeat(a, r2); !slices.Equal(hb.Stale, []string{r2.TaskID}) {
		t.Fatalf("the handed-back lease was not named stale: %+v", hb)
	}

	b := h.registerNode("gpu-b")
	for range 3 { // finalize of v1; render and finalize of v2
		task := h.leaseTask(b, 5)
		if task.TaskID == r2.TaskID && task.Attempt != 2 {
			t.Fatalf("the handed-back render on node b: %+v", task)
		}
		files := []string{"clip.mp4"}
		if task.Kind == scheduler.KindFinalize {
			files = []string{wire.ArtifactVideo, wire.ArtifactPoster}
		}
		h.runTask(b, task, files...)
	}
	var charged int64
	for _, id := range []string{v1, v2} {
		v := h.do("GET", "/v1/videos/"+id, key, nil).json(t)
		if v["status"] != "completed" {
			t.Fatalf("video %s: %v", id, v)
		}
		charged += jsonInt(t, v["credits_charged"])
	}
	if got := h.balance(key); charged == 0 || got != 1000-charged {
		t.Fatalf("balance %d after charges of %d: want %d (each video charged once, nothing refunded)", got, charged, 1000-charged)
	}

	if n, err = h.admin.UncordonNode(ctx, "gpu-a"); err != nil || n.State != admin.NodeActive || n.MaintenanceSince != nil {
		t.Fatalf("uncordon: %+v %v", n, err)
	}
	if hb := h.heartbeat(a); hb.Maintenance != "" || hb.DrainDeadline != nil {
		t.Fatalf("heartbeat answer after uncordon: %+v", hb)
	}
	v3 := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	if got := h.leaseTask(a, 5); got.Video.ID != v3 {
		t.Fatalf("the uncordoned node got %+v", got)
	}
}

// TestNodeMaintenanceRefusals: unknown nodes, bad bodies and no token.
func TestNodeMaintenanceRefusals(t *testing.T) {
	t.Parallel()
	h := start(t, withAgent(30*time.Second))
	h.registerNode("gpu-a")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		call   func() error
		status int
		code   string
	}{
		{"cordon unknown", func() error { _, err := h.admin.CordonNode(ctx, "gpu-nope", ""); return err }, http.StatusNotFound, apierr.CodeNotFound},
		{"uncordon unknown", func() error { _, err := h.admin.UncordonNode(ctx, "gpu-nope"); return err }, http.StatusNotFound, apierr.CodeNotFound},
		{"negative timeout", func() error { _, err := h.admin.DrainNode(ctx, "gpu-a", -time.Second, ""); return err }, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"timeout past a week", func() error { _, err := h.admin.DrainNode(ctx, "gpu-a", 8*24*time.Hour, ""); return err }, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"escape sequence in the reason", func() error { _, err := h.admin.CordonNode(ctx, "gpu-a", "fans\x1b]0;PWNED\x07"); return err }, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"direction override in the reason", func() error { _, err := h.admin.DrainNode(ctx, "gpu-a", time.Minute, "disk \u202eliaf"); return err }, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"unknown field", func() error {
			_, err := h.admin.Do(ctx, http.MethodPost, "/admin/v1/nodes/gpu-a/cordon", map[string]any{"why": "x"})
			return err
		}, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"no token", func() error {
			_, err := (&admin.Client{Server: h.admin.Server}).Nodes(ctx)
			return err
		}, http.StatusUnauthorized, apierr.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *apierr.Error
			if err := tc.call(); !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code {
				t.Fatalf("got %v, want %d %s", err, tc.status, tc.code)
			}
		})
	}
	if n := h.adminNode("gpu-a"); n.State != admin.NodeActive {
		t.Fatalf("a refused request changed the node: %+v", n)
	}
	n, err := h.admin.CordonNode(ctx, "gpu-a", "fan noise")
	if err != nil || n.State != admin.NodeCordoned || n.DrainDeadline != nil || n.MaintenanceReason != "fan noise" {
		t.Fatalf("cordon: %+v %v", n, err)
	}
}
