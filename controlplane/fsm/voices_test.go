package fsm_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

var (
	vEnUS   = fsm.Voice{ID: "en-us", Name: "English (America)", Language: "en-us", Gender: "male"}
	vEnUSF3 = fsm.Voice{ID: "en-us+f3", Name: "English (America), Female 3", Language: "en-us", Gender: "female"}
	vFr     = fsm.Voice{ID: "fr-fr", Name: "French (France)", Language: "fr-fr", Gender: "male"}
	vYue    = fsm.Voice{ID: "yue", Name: "Chinese (Cantonese)", Language: "yue", Gender: "male"}
)

func voiceIDs(vs []fsm.Voice) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.ID)
	}
	return out
}

// voiceFarm applies commands through the log encoding, as replicas do.
type voiceFarm struct {
	t   *testing.T
	f   *fsm.FSM
	now int64
}

func (vf *voiceFarm) register(id, name string, voices ...fsm.Voice) {
	vf.t.Helper()
	vf.now++
	if _, err := viaLog(vf.t, vf.f, &fsm.RegisterNode{NodeID: id, Name: name, CredHash: keyHash("cred-" + id),
		Node: scheduler.Node{CPUSlots: 1, Tools: []string{"espeak-ng"}}, Voices: voices, Now: vf.now}); err != nil {
		vf.t.Fatalf("register %s: %v", id, err)
	}
}

func (vf *voiceFarm) deregister(id string) {
	vf.t.Helper()
	vf.now++
	if _, err := viaLog(vf.t, vf.f, &fsm.DeregisterNode{NodeID: id, Now: vf.now}); err != nil {
		vf.t.Fatalf("deregister %s: %v", id, err)
	}
}

func (vf *voiceFarm) want(what string, ids ...string) {
	vf.t.Helper()
	if ids == nil {
		ids = []string{}
	}
	if got := voiceIDs(vf.f.Voices()); !reflect.DeepEqual(got, ids) {
		vf.t.Fatalf("%s: catalogue %q, want %q", what, got, ids)
	}
	if n := vf.f.VoiceCount(); n != len(ids) {
		vf.t.Fatalf("%s: VoiceCount %d, want %d", what, n, len(ids))
	}
}

func TestVoiceCatalogueIsTheUnionOfRegisteredNodes(t *testing.T) {
	vf := &voiceFarm{t: t, f: fsm.New()}
	vf.want("no nodes")
	if _, ok := vf.f.Voice("en-us"); ok {
		t.Fatal("a voice without nodes")
	}
	vf.register("node_a", "a", vYue, vEnUS, vEnUSF3) // any order
	vf.register("node_b", "b", vEnUS, vFr)
	vf.register("node_c", "c") // no espeak-ng
	vf.want("three nodes", "en-us", "en-us+f3", "fr-fr", "yue")
	if v, ok := vf.f.Voice("en-us+f3"); !ok || v != vEnUSF3 {
		t.Fatalf("Voice(en-us+f3) = %+v, %v", v, ok)
	}

	// A node's record holds its voices sorted, duplicates dropped.
	for _, nv := range vf.f.Nodes() {
		if nv.Node.ID == "node_a" && !reflect.DeepEqual(voiceIDs(nv.Node.Voices), []string{"en-us", "en-us+f3", "yue"}) {
			t.Fatalf("node_a's voices: %q", voiceIDs(nv.Node.Voices))
		}
		if nv.Node.ID == "node_c" && nv.Node.Voices != nil {
			t.Fatalf("node_c's voices: %+v", nv.Node.Voices)
		}
	}

	// A voice leaves with the last node that has it.
	vf.deregister("node_b")
	vf.want("node_b left", "en-us", "en-us+f3", "yue")

	// Registering again under the same name replaces the node and its voices.
	vf.register("node_a2", "a", vFr, vFr)
	vf.want("a replaced", "fr-fr")
	if n := len(vf.f.Nodes()); n != 2 {
		t.Fatalf("%d nodes after the replacement, want 2", n)
	}
	// The same node id again (a replayed registration) replaces its record too.
	vf.register("node_a2", "a", vEnUS)
	vf.want("node_a2 again", "en-us")
	vf.register("node_a3", "a", vEnUS) // same voices: the catalogue stays as it was
	vf.want("a replaced by the same voices", "en-us")

	vf.deregister("node_a3")
	vf.deregister("node_c")
	vf.want("no nodes left")
	if vf.f.Voices() != nil {
		t.Fatal("empty catalogue is not nil")
	}
}

// Nodes with different espeak-ng versions may describe one id differently:
// the catalogue shows the least description (by name, then language, then
// gender), whatever the order the nodes came in.
func TestVoiceCatalogueResolvesDifferentDescriptions(t *testing.T) {
	older := fsm.Voice{ID: "en-us", Name: "English (USA)", Language: "en-us", Gender: "male"}
	for _, order := range [][]string{{"x", "y"}, {"y", "x"}} {
		vf := &voiceFarm{t: t, f: fsm.New()}
		for _, n := range order {
			if n == "x" {
				vf.register("node_x", "x", vEnUS)
			} else {
				vf.register("node_y", "y", older)
			}
		}
		if v, _ := vf.f.Voice("en-us"); v != vEnUS {
			t.Fatalf("order %v: en-us is %+v", order, v)
		}
		if vs := vf.f.Voices(); len(vs) != 1 || vs[0] != vEnUS {
			t.Fatalf("order %v: catalogue %+v", order, vs)
		}
		vf.deregister("node_x")
		if v, _ := vf.f.Voice("en-us"); v != older {
			t.Fatalf("order %v: after node_x left, en-us is %+v", order, v)
		}
		if vs := vf.f.Voices(); len(vs) != 1 || vs[0] != older {
			t.Fatalf("order %v: after node_x left, catalogue %+v", order, vs)
		}
	}
}

func TestVoiceCatalogueSurvivesSnapshots(t *testing.T) {
	vf := &voiceFarm{t: t, f: fsm.New()}
	vf.register("node_a", "a", vYue, vEnUS, vEnUSF3)
	vf.register("node_b", "b", vFr, vEnUS)
	vf.register("node_c", "c")
	vf.register("node_d", "d", vFr)
	vf.deregister("node_d")

	snap := snapshotBytes(t, vf.f)
	if !bytes.Equal(snap, snapshotBytes(t, vf.f)) {
		t.Fatal("two snapshots of one state differ")
	}
	back := restored(t, snap)
	if !reflect.DeepEqual(back.Voices(), vf.f.Voices()) || back.VoiceCount() != 4 {
		t.Fatalf("restored catalogue %+v, want %+v", back.Voices(), vf.f.Voices())
	}
	if !reflect.DeepEqual(back.Nodes(), vf.f.Nodes()) {
		t.Fatalf("restored nodes differ:\n%+v\n%+v", back.Nodes(), vf.f.Nodes())
	}
	if !bytes.Equal(snapshotBytes(t, back), snap) {
		t.Fatal("the restored state snapshots to other bytes")
	}
	// The index was rebuilt, not just the list: changes apply to it as before.
	rb := &voiceFarm{t: t, f: back, now: vf.now}
	rb.deregister("node_a")
	rb.want("node_a left the restored farm", "en-us", "fr-fr")

	// The same voices registered in another order give the same snapshot bytes.
	x, y := &voiceFarm{t: t, f: fsm.New()}, &voiceFarm{t: t, f: fsm.New()}
	x.register("node_a", "a", vYue, vEnUS, vFr)
	y.register("node_a", "a", vFr, vYue, vEnUS)
	if !bytes.Equal(snapshotBytes(t, x.f), snapshotBytes(t, y.f)) {
		t.Fatal("a node's voice order reached the snapshot")
	}
}

// Reads hand out copies: changing them changes nothing in the FSM.
func TestVoicesReadsAreCopies(t *testing.T) {
	vf := &voiceFarm{t: t, f: fsm.New()}
	vf.register("node_a", "a", vEnUS, vFr)
	vs := vf.f.Voices()
	vs[0].Name = "changed"
	_ = append(vf.f.Nodes()[0].Node.Voices, vYue)
	if v, _ := vf.f.Voice("en-us"); v != vEnUS {
		t.Fatalf("catalogue changed through a read: %+v", v)
	}
	vf.want("after the reader's changes", "en-us", "fr-fr")
}
