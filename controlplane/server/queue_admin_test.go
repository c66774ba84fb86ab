package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/scheduler"
)

// TestAdminQueueAndInspect: the queue lists what waits with its reason and
// the task that waits, oldest first; inspect shows a video's graph with the
// node that runs a task.
func TestAdminQueueAndInspect(t *testing.T) {
	t.Parallel()
	h := start(t, withAgent(30*time.Second))
	ctx := context.Background()
	_, key := h.account("pro", 1000)
	v1 := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	v2 := h.create(key, manualReq("duration_seconds", 5))["id"].(string)

	q, err := h.admin.Queue(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if q.UnfinishedVideos != 2 || q.ReadyTasks != 2 || !q.HasMore || len(q.Waiting) != 1 {
		t.Fatalf("queue with no node: %+v", q)
	}
	if w := q.Waiting[0]; w.VideoID != v1 || w.Reason != string(scheduler.ReasonNoNodeFits) || w.Task != "render" ||
		w.QueuePosition != 1 || w.WaitingSince == nil || w.Message == "" {
		t.Fatalf("oldest waiting video: %+v", w)
	}

	a := h.registerNode("gpu-a")
	if render := h.leaseTask(a, 5); render.Video.ID != v1 {
		t.Fatalf("first lease %+v, want the oldest video's render", render)
	}
	q, err = h.admin.Queue(ctx, "", 0)
	if err != nil || len(q.Waiting) != 1 || q.Waiting[0].VideoID != v2 || q.Waiting[0].Reason == "" || q.HasMore {
		t.Fatalf("queue with v1 running: %+v %v", q, err)
	}
	v, err := h.admin.InspectVideo(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != "processing" || len(v.Tasks) != 2 || v.Tasks[0].Name != "render" || v.Tasks[0].State != "leased" ||
		v.Tasks[0].Attempts != 1 || v.Tasks[0].Leased == nil || v.Tasks[1].State != "blocked" || v.Tasks[1].Deps[0] != "render" {
		t.Fatalf("inspect: %+v", v)
	}
	var e *apierr.Error
	if _, err := h.admin.InspectVideo(ctx, "vid_nope"); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("inspect unknown: %v", err)
	}
	if _, err := h.admin.Do(ctx, http.MethodGet, "/admin/v1/queue?limit=0", nil); !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("limit 0: %v", err)
	}
}
