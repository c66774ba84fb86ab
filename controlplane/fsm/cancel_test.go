package fsm_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func TestCancelRefund(t *testing.T) {
	for _, tc := range []struct {
		charged int64
		share   float64
		want    int64
	}{
		{10, 0, 10}, {10, 0.1, 9}, {10, 0.15, 9}, {10, 0.7, 3}, {10, 1, 0}, {7, 0.5, 4}, {0, 0.5, 0}, {10, -1, 10}, {10, 2, 0},
	} {
		if got := fsm.CancelRefund(tc.charged, tc.share); got != tc.want {
			t.Errorf("CancelRefund(%d, %v) = %d, want %d", tc.charged, tc.share, got, tc.want)
		}
	}
}

// TestCancelVideo cancels a queued video (full refund), a processing one
// whose plan finished (refund less the plan's share), and refuses what
// cannot be canceled.
func TestCancelVideo(t *testing.T) {
	w := newWorld(t, appliers[1])
	w.account("a", fsm.PlanPro, 100)
	w.account("b", fsm.PlanPro, 100)
	w.must(&fsm.CreateWebhook{WebhookID: "whk_all", AccountID: "a", URL: "https://h.example/1", Events: fsm.EventTypes, Secret: "whsec_1", Now: t0})
	w.must(&fsm.CreateWebhook{WebhookID: "whk_def", AccountID: "a", URL: "https://h.example/2", Events: fsm.DefaultEventTypes, Secret: "whsec_2", Now: t0})

	w.must(createVideo("v_queued", "a", 10, "", "", t0))
	res := must(w, &fsm.CancelVideo{VideoID: "v_queued", AccountID: "a", Now: t0 + 5})
	if res.Already || res.Video.Status != fsm.StatusCanceled || res.Video.RefundedCredits != 10 || res.Video.FinishedAt != t0+5 {
		t.Fatalf("cancel of a queued video: %+v", res)
	}
	if got := w.balance("a"); got != 100 {
		t.Fatalf("balance %d after canceling a queued video, want 100", got)
	}
	again := must(w, &fsm.CancelVideo{VideoID: "v_queued", AccountID: "a", Now: t0 + 6})
	if !again.Already || again.Video.FinishedAt != t0+5 || w.balance("a") != 100 {
		t.Fatalf("second cancel: %+v, balance %d", again, w.balance("a"))
	}
	ds := w.f.Deliveries(fsm.DeliveryFilter{EventID: fsm.EventID("v_queued")})
	if len(ds) != 1 || ds[0].WebhookID != "whk_all" {
		t.Fatalf("deliveries of the canceled event %+v, want one to the endpoint subscribed to video.canceled", ds)
	}
	if e, ok := w.f.Event(fsm.EventID("v_queued")); !ok || e.Type != fsm.EventVideoCanceled {
		t.Fatalf("event %+v", e)
	}

	// An auto video whose plan finished: the plan's weight (10 of 100) is charged.
	w.node("n1", 4, true)
	w.must(createVideo("v_auto", "a", 20, "", "", t0))
	l, ok := w.lease("n1", t0+1)
	if !ok || l.VideoID != "v_auto" {
		t.Fatalf("lease %+v %v", l, ok)
	}
	w.complete(l, t0+2)
	if got := w.get("a", "v_auto").Status; got != fsm.StatusProcessing {
		t.Fatalf("status %s, want processing", got)
	}
	running, ok := w.lease("n1", t0+3)
	if !ok {
		t.Fatal("no second task")
	}
	if q := w.get("a", "v_auto"); (q.Stage != "voicing" && q.Stage != "rendering_scenes") || q.ScenesTotal == 0 {
		t.Fatalf("stage %q with %d/%d scenes after the plan, want voicing or rendering_scenes", q.Stage, q.ScenesDone, q.ScenesTotal)
	}
	res = must(w, &fsm.CancelVideo{VideoID: "v_auto", AccountID: "a", Now: t0 + 4})
	if res.Video.RefundedCredits != 18 || w.balance("a") != 98 {
		t.Fatalf("cancel of a processing video refunded %d (balance %d), want 18 (98)", res.Video.RefundedCredits, w.balance("a"))
	}
	// The running task's lease is gone: its holder learns it at its next report.
	if _, err := w.apply(&fsm.TaskProgress{NodeID: "n1", TaskID: running.TaskID, Token: running.Token, Percent: 50, Now: t0 + 5}); err == nil {
		t.Fatal("progress on a canceled video's lease was accepted")
	}
	if l, ok := w.lease("n1", t0+6); ok {
		t.Fatalf("a canceled video's task was leased: %+v", l)
	}

	_, err := w.apply(&fsm.CancelVideo{VideoID: "v_auto", AccountID: "b", Now: t0 + 7})
	wantErr(t, err, fsm.ErrVideoNotFound)
	w.must(createVideo("v_failed", "a", 5, "", "", t0))
	w.must(&fsm.FailVideo{VideoID: "v_failed", Reason: "r", Now: t0 + 8})
	_, err = w.apply(&fsm.CancelVideo{VideoID: "v_failed", AccountID: "a", Now: t0 + 9})
	wantErr(t, err, fsm.ErrNotCancelable)
	w.account("free", fsm.PlanFree, 0)
	w.must(createVideo("v_preview", "free", 5, "", "", t0))
	_, err = w.apply(&fsm.CancelVideo{VideoID: "v_preview", AccountID: "free", Now: t0 + 9})
	wantErr(t, err, fsm.ErrNotCancelable)
	if got := w.get("a", "v_failed").Status; got != fsm.StatusFailed {
		t.Fatalf("a refused cancel changed the video: %s", got)
	}
}
