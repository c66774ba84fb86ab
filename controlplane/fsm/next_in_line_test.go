package fsm_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

// TestNextInLine: before NextInLine a video first in line says the nodes
// are busy with work ahead of it, as it always did; from it on it says it
// is next in line, in its create's answer and in reads, and a video behind
// it still says busy. The switch survives a snapshot.
func TestNextInLine(t *testing.T) {
	busy, next := string(scheduler.ReasonNodesBusy), string(scheduler.ReasonNextInLine)
	for _, ap := range appliers {
		t.Run(ap.name, func(t *testing.T) {
			w := newWorld(t, ap)
			w.account("a", fsm.PlanPro, 10_000)
			w.node("n1", 1, true)
			if v := w.video("v1", "a", 10); v.QueuePosition != 1 || v.WaitReason != busy {
				t.Fatalf("first in line before the switch: position %d, %q", v.QueuePosition, v.WaitReason)
			}
			if !must(w, &fsm.NextInLine{Now: t0}) || !w.f.NextInLineOn() {
				t.Fatal("the reason did not switch")
			}
			if must(w, &fsm.NextInLine{Now: t0}) {
				t.Fatal("a second switch answered that it switched")
			}
			if v := w.get("a", "v1"); v.WaitReason != next || v.WaitMessage == "" {
				t.Fatalf("v1 read after the switch: %q %q", v.WaitReason, v.WaitMessage)
			}
			if _, ok := w.lease("n1", t0+1); !ok { // v1's plan takes the node's one CPU slot
				t.Fatal("nothing leased")
			}
			if v := w.video("v2", "a", 10); v.QueuePosition != 1 || v.WaitReason != next {
				t.Fatalf("first in line for a full node: position %d, %q", v.QueuePosition, v.WaitReason)
			}
			if v := w.video("v3", "a", 10); v.QueuePosition != 2 || v.WaitReason != busy {
				t.Fatalf("second in line: position %d, %q", v.QueuePosition, v.WaitReason)
			}
			r := restored(t, snapshotBytes(t, w.f))
			if !r.NextInLineOn() {
				t.Fatal("the switch did not survive a snapshot")
			}
			for id, want := range map[string]string{"v2": next, "v3": busy} {
				if v, ok := r.Video("a", id); !ok || v.WaitReason != want {
					t.Fatalf("restored %s: %q, want %q", id, v.WaitReason, want)
				}
			}
		})
	}
}
