package fsm_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestVoiceRouting checks that once routing is on a tts task goes only to a
// node offering its voice, waits while none does and goes on when one comes
// back; that a graph built before the switch keeps its requirement; and that
// the switch survives a snapshot.
func TestVoiceRouting(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 1000)
			register := func(id string, tools []string, voices ...string) {
				var vs []fsm.Voice
				for _, v := range voices {
					vs = append(vs, fsm.Voice{ID: v, Name: v, Language: "en", Gender: "female"})
				}
				w.must(&fsm.RegisterNode{NodeID: id, Name: "name-" + id, CredHash: keyHash("node-" + id),
					Node: scheduler.Node{CPUSlots: 4, Tools: tools}, Voices: vs, Now: t0})
			}
			// espeak speaks "en" only; server has a speech server's voice and no espeak-ng.
			register("espeak", []string{"espeak-ng", "ffmpeg"}, "en")
			register("server", []string{"ffmpeg"}, "af_bella")
			auto := func(id string) {
				c := createVideo(id, "acct", 10, "", "", t0)
				c.Spec.VoiceID = "af_bella"
				w.must(c)
			}
			// planned leases v's plan on node and completes it, making its tts ready.
			planned := func(node, id string) {
				l, ok := w.lease(node, t0+1)
				if !ok || l.VideoID != id || l.Kind != scheduler.KindPlan {
					t.Fatalf("%s: want the plan of %s, got %+v (found %v)", node, id, l, ok)
				}
				w.complete(l, t0+2)
			}
			leaseTTS := func(node, id string) bool {
				l, ok := w.lease(node, t0+3)
				if ok && (l.VideoID != id || l.Kind != scheduler.KindTTS) {
					t.Fatalf("%s: want the tts of %s or nothing, got %+v", node, id, l)
				}
				return ok
			}

			auto("before")
			planned("espeak", "before")
			if on := must(w, &fsm.StartRouting{Now: t0 + 4}); !on || !w.f.RoutingOn() {
				t.Fatal("routing did not switch on")
			}
			if must(w, &fsm.StartRouting{Now: t0 + 5}) {
				t.Fatal("a second switch answered that it switched routing on")
			}
			if tools := mustNode(t, w.f, "server").Tools; !slices.Contains(tools, "voice:af_bella") || !slices.Contains(tools, "ffmpeg") {
				t.Fatalf("the switch gave the registered node tools %v", tools)
			}
			// Built before the switch: any node with espeak-ng, as it always was.
			if !leaseTTS("espeak", "before") {
				t.Fatal("a tts task built before the switch lost its node")
			}

			auto("after")
			planned("server", "after")
			if leaseTTS("espeak", "after") {
				t.Fatal("a node without the voice was given its tts task")
			}
			w.must(&fsm.DeregisterNode{NodeID: "server", Now: t0 + 6})
			if leaseTTS("espeak", "after") {
				t.Fatal("with the voice's node gone, its tts task went to a node without it")
			}
			// A node registering after the switch offers its voices at once.
			register("server2", []string{"ffmpeg"}, "af_bella")
			if !leaseTTS("server2", "after") {
				t.Fatal("the tts task did not go on when a node with its voice came back")
			}

			sp := must(w, &fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct", Text: "hello", VoiceID: "af_bella", Now: t0 + 7})
			if l, ok := w.lease("espeak", t0+8); ok {
				t.Fatalf("a speech sample in af_bella went to a node without it: %+v", l)
			}
			if l, ok := w.lease("server2", t0+8); !ok || l.VideoID != sp.ID {
				t.Fatalf("the speech sample was not given to the node with its voice: %+v %v", l, ok)
			}

			b := snapshotBytes(t, w.f)
			r := restored(t, b)
			if !r.RoutingOn() || !bytes.Equal(snapshotBytes(t, r), b) {
				t.Fatal("the switch did not survive a snapshot")
			}
		})
	}
}

// TestStageRunnerRouting: once routing is on, a new auto video's plan task
// requires the planner and its composite the lip-sync runner while some
// registered node offers them, and waits for one when none is left; a video
// made while no node offers them goes anywhere.
func TestStageRunnerRouting(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.account("acct", fsm.PlanPro, 1000)
			register := func(id string, tools ...string) {
				w.must(&fsm.RegisterNode{NodeID: id, Name: "name-" + id, CredHash: keyHash("node-" + id),
					Node: scheduler.Node{CPUSlots: 4, Tools: append([]string{"espeak-ng", "ffmpeg"}, tools...)}, Now: t0})
			}
			register("plain")
			must(w, &fsm.StartRouting{Now: t0})
			w.must(createVideo("anywhere", "acct", 10, "", "", t0))
			register("studio", wire.ToolPlanner, wire.ToolAvatar)
			w.must(createVideo("routed", "acct", 10, "", "", t0))

			reqOf := func(id, name string) scheduler.Requirements {
				t.Helper()
				g, _ := w.f.VideoGraph(id)
				for _, tk := range g.Tasks {
					if tk.Name == name {
						return tk.Req
					}
				}
				t.Fatalf("video %s has no task %s", id, name)
				return scheduler.Requirements{}
			}
			if tools := reqOf("anywhere", scheduler.NamePlan).Tools; slices.Contains(tools, wire.ToolPlanner) {
				t.Fatalf("a plan made while no node had a planner requires one: %v", tools)
			}
			if tools := reqOf("routed", scheduler.NameComposite).Tools; !slices.Contains(tools, wire.ToolAvatar) || !slices.Contains(tools, "ffmpeg") {
				t.Fatalf("the composite of a video made with a lip-sync node registered needs %v", tools)
			}
			// The plain node takes the first video's plan, never the second's.
			if l, ok := w.lease("plain", t0+1); !ok || l.VideoID != "anywhere" || l.Kind != scheduler.KindPlan {
				t.Fatalf("plain node: want the plan of anywhere, got %+v %v", l, ok)
			}
			if l, ok := w.lease("plain", t0+1); ok {
				t.Fatalf("the node without a planner was given %+v", l)
			}
			w.must(&fsm.DeregisterNode{NodeID: "studio", Now: t0 + 2})
			if l, ok := w.lease("plain", t0+3); ok {
				t.Fatalf("with the planner's node gone, its plan went to a node without one: %+v", l)
			}
			register("studio2", wire.ToolPlanner)
			if l, ok := w.lease("studio2", t0+4); !ok || l.VideoID != "routed" || l.Kind != scheduler.KindPlan {
				t.Fatalf("the plan did not go on when a planner came back: %+v %v", l, ok)
			}
		})
	}
}

// TestStartRoutingLeavesSilentNodesDown: switching routing on gives the
// registered nodes their voices' tools without taking that for a word from
// them: a node that went silent and was marked down stays down.
func TestStartRoutingLeavesSilentNodesDown(t *testing.T) {
	w := newWorld(t, appliers[0])
	w.must(&fsm.RegisterNode{NodeID: "quiet", Name: "name-quiet", CredHash: keyHash("node-quiet"),
		Node: scheduler.Node{CPUSlots: 1, Tools: []string{"espeak-ng"}}, Voices: []fsm.Voice{{ID: "en", Name: "en"}}, Now: t0})
	w.must(&fsm.ExpireLeases{Now: t0 + int64(scheduler.DefaultNodeTimeout) + sec})
	if n := mustNode(t, w.f, "quiet"); !n.Down {
		t.Fatal("a node silent past the node timeout is not down")
	}
	must(w, &fsm.StartRouting{Now: t0 + int64(scheduler.DefaultNodeTimeout) + 2*sec})
	n := mustNode(t, w.f, "quiet")
	if !n.Down || !slices.Contains(n.Tools, "voice:en") {
		t.Fatalf("after the switch: down %v, tools %v; want still down, with voice:en", n.Down, n.Tools)
	}
}
