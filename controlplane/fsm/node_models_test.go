package fsm_test

import (
	"slices"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

// A node whose runner goes down while it renders keeps that render's
// lease, its cordon and its GPUs; new work of the withdrawn model waits
// for a node that has it, and comes back when the model does.
func TestSetNodeModelsKeepsLeasesAndMarks(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 100)
			w.node("a", 4, true)
			manual := func(id string) {
				c := createVideo(id, "acct", 10, "", "", t0)
				c.Spec = manualSpec("prompt of " + id)
				w.must(c)
			}
			manual("v1")
			l1, ok := w.lease("a", t0+sec)
			if !ok || l1.Req.Model != "wan-2.2-a14b" {
				t.Fatalf("first lease %+v", l1)
			}
			others := slices.DeleteFunc(slices.Clone(mustNode(t, w.f, "a").Models), func(m string) bool { return m == "wan-2.2-a14b" })
			must(w, &fsm.CordonNode{NodeID: "a", Reason: "checking", Now: t0 + 2*sec})
			must(w, &fsm.SetNodeModels{NodeID: "a", Models: others, WarmModels: []string{"veo-3"}, Now: t0 + 3*sec})
			n := mustNode(t, w.f, "a")
			if slices.Contains(n.Models, "wan-2.2-a14b") || !slices.Equal(n.WarmModels, []string{"veo-3"}) || !n.Cordoned ||
				n.Leases != 1 || len(n.GPUs) != 4 {
				t.Fatalf("node after the update: models %d warm %v cordoned %v leases %d gpus %d", len(n.Models), n.WarmModels, n.Cordoned, n.Leases, len(n.GPUs))
			}
			must(w, &fsm.UncordonNode{NodeID: "a", Now: t0 + 4*sec})
			manual("v2")
			if v := w.get("acct", "v2"); v.WaitReason != "no_node_supports_model" {
				t.Fatalf("a video of the withdrawn model waits with %q", v.WaitReason)
			}
			w.complete(l1, t0+5*sec) // the running render was not lost
			must(w, &fsm.SetNodeModels{NodeID: "a", Models: append(others, "wan-2.2-a14b"), Now: t0 + 6*sec})
			if l, ok := w.lease("a", t0+7*sec); !ok || (l.VideoID != "v1" && l.VideoID != "v2") {
				t.Fatalf("no work after the model came back: %+v", l)
			}
			if _, err := w.apply(&fsm.SetNodeModels{NodeID: "nope", Now: t0 + 8*sec}); err == nil {
				t.Fatal("an unknown node's models were set")
			}
		})
	}
}

func mustNode(t *testing.T, f *fsm.FSM, id string) scheduler.NodeInfo {
	t.Helper()
	for _, n := range f.Nodes() {
		if n.Info.ID == id {
			return n.Info
		}
	}
	t.Fatalf("no node %s", id)
	return scheduler.NodeInfo{}
}
