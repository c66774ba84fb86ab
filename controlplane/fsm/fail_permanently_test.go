package fsm_test

import (
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestFailTaskPermanently: a task failed permanently fails its video at
// once, refunded, where a FailTask of the same task would be retried.
func TestFailTaskPermanently(t *testing.T) {
	for _, ap := range appliers {
		t.Run(ap.name, func(t *testing.T) {
			w := newWorld(t, ap)
			w.account("a", fsm.PlanPro, 100)
			w.node("n1", 2, true)
			w.video("v1", "a", 10)
			l, ok := w.lease("n1", t0+1)
			if !ok {
				t.Fatal("nothing leased")
			}
			out := must(w, &fsm.FailTaskPermanently{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token,
				Reason: "input image https://x.example/a.png answered HTTP 404", Now: t0 + 2})
			if !out.VideoFailed || out.Requeued {
				t.Fatalf("outcome %+v", out)
			}
			v := w.get("a", "v1")
			if v.Status != fsm.StatusFailed || !v.CreditsRefunded || !strings.Contains(v.ErrorMessage, "HTTP 404") {
				t.Fatalf("video after a permanent failure: %s refunded=%v %q", v.Status, v.CreditsRefunded, v.ErrorMessage)
			}
			if b := w.balance("a"); b != 100 {
				t.Fatalf("balance %d, want the charge refunded (100)", b)
			}
		})
	}
}
