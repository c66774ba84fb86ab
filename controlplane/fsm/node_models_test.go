package fsm_test

import (
	"slices"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
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

// A speech server that goes down takes its voice out of the catalogue and
// the node's tools in place (the node keeps its lease and cordon), and its
// voice's tts tasks wait; when it comes back they go to it again.
func TestSetNodeCapacityVoicesAndTools(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 1000)
			bella := fsm.Voice{ID: "af_bella", Name: "Bella", Language: "en-us", Gender: "female"}
			w.must(&fsm.RegisterNode{NodeID: "a", Name: "a", CredHash: keyHash("node-a"),
				Node: scheduler.Node{CPUSlots: 4, Tools: []string{"ffmpeg"}}, Voices: []fsm.Voice{bella}, Now: t0})
			must(w, &fsm.StartRouting{Now: t0})
			c := createVideo("v1", "acct", 10, "", "", t0)
			c.Spec.VoiceID = "af_bella"
			w.must(c)
			plan, ok := w.lease("a", t0+sec)
			if !ok || plan.Kind != scheduler.KindPlan {
				t.Fatalf("first lease %+v", plan)
			}
			must(w, &fsm.CordonNode{NodeID: "a", Reason: "checking", Now: t0 + 2*sec})

			must(w, &fsm.SetNodeCapacity{NodeID: "a", Tools: []string{"ffmpeg", wire.ToolPlanner}, Now: t0 + 3*sec})
			n := mustNode(t, w.f, "a")
			if slices.Contains(n.Tools, "voice:af_bella") || !slices.Contains(n.Tools, wire.ToolPlanner) || !n.Cordoned || n.Leases != 1 {
				t.Fatalf("node after the voice left: tools %v cordoned %v leases %d", n.Tools, n.Cordoned, n.Leases)
			}
			if _, ok := w.f.Voice("af_bella"); ok {
				t.Fatal("the voice stayed in the catalogue without a node")
			}
			must(w, &fsm.UncordonNode{NodeID: "a", Now: t0 + 4*sec})
			w.complete(plan, t0+5*sec) // the running plan was not lost
			if l, ok := w.lease("a", t0+6*sec); ok {
				t.Fatalf("the tts task of a voice no node offers was leased: %+v", l)
			}

			must(w, &fsm.SetNodeCapacity{NodeID: "a", Tools: []string{"ffmpeg"}, Voices: []fsm.Voice{bella}, Now: t0 + 7*sec})
			if v, ok := w.f.Voice("af_bella"); !ok || v != bella {
				t.Fatalf("the voice came back as %+v (%v)", v, ok)
			}
			if l, ok := w.lease("a", t0+8*sec); !ok || l.Kind != scheduler.KindTTS {
				t.Fatalf("no tts task once the voice came back: %+v", l)
			}
			if _, err := w.apply(&fsm.SetNodeCapacity{NodeID: "nope", Now: t0 + 9*sec}); err == nil {
				t.Fatal("an unknown node's capacity was set")
			}
		})
	}
}
