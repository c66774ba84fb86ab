package fsm_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

const sec int64 = 1e9

// A node drained while it runs two videos' renders: one finishes before the
// deadline, the other is handed back at it without a failure and finishes
// on another node; each video is charged once and never refunded, and the
// drained node's late report is refused.
func TestDrainHandsBackWithoutFailureOrSecondCharge(t *testing.T) {
	for _, a := range appliers {
		t.Run(a.name, func(t *testing.T) {
			w := newWorld(t, a)
			w.must(&fsm.SetAppExport{On: true, Now: t0})
			w.account("acct", fsm.PlanPro, 100)
			w.node("a", 4, true)
			w.video("v1", "acct", 10)
			w.video("v2", "acct", 10)
			l1, _ := w.lease("a", t0+sec)
			l2, _ := w.lease("a", t0+sec)
			if l1.VideoID != "v1" || l2.VideoID != "v2" {
				t.Fatalf("leases %+v %+v", l1, l2)
			}
			n := must(w, &fsm.DrainNode{NodeID: "a", Deadline: t0 + 60*sec, Reason: "kernel update", Now: t0 + 2*sec})
			if m := n.Maintenance; m == nil || m.State != fsm.MaintenanceDraining || m.Since != t0+2*sec || m.Deadline != t0+60*sec {
				t.Fatalf("drained node %+v", n.Maintenance)
			}
			w.video("v3", "acct", 10)
			if res := must(w, &fsm.LeaseTask{NodeID: "a", LeaseMS: 60_000, Now: t0 + 3*sec}); res.Found || !strings.Contains(res.Why, "cordoned") {
				t.Fatalf("a draining node was given work: %+v", res)
			}
			w.complete(l1, t0+4*sec) // finishes while draining
			if w.f.HandBackDue(t0 + 59*sec) {
				t.Fatal("hand-back due before the deadline")
			}
			if !w.f.HandBackDue(t0 + 60*sec) {
				t.Fatal("hand-back not due at the deadline")
			}
			back := must(w, &fsm.HandBackDrained{Now: t0 + 60*sec})
			if len(back.Leases) != 1 || back.Leases[0].TaskID != l2.TaskID {
				t.Fatalf("handed back %+v", back.Leases)
			}
			if w.f.HandBackDue(t0 + 61*sec) {
				t.Fatal("hand-back still due with nothing left on the node")
			}
			if task, _ := w.f.Task(l2.TaskID); task.State != scheduler.TaskReady || task.Failures != 0 {
				t.Fatalf("handed-back task %+v", task)
			}
			_, err := w.apply(&fsm.CompleteTask{NodeID: "a", TaskID: l2.TaskID, Token: l2.Token, Now: t0 + 62*sec})
			wantErr(t, err, scheduler.ErrStaleLease)

			w.node("b", 4, true)
			for _, id := range []string{"v1", "v2", "v3"} {
				w.finish("b", id)
			}
			for _, id := range []string{"v1", "v2", "v3"} {
				if v := w.get("acct", id); v.Status != fsm.StatusCompleted || v.CreditsRefunded || v.CreditsCharged != 10 {
					t.Fatalf("video %s: %s, charged %d, refunded %v", id, v.Status, v.CreditsCharged, v.CreditsRefunded)
				}
			}
			if got := w.balance("acct"); got != 70 {
				t.Fatalf("balance %d, want 70: three videos charged once each", got)
			}
			charges := map[string]int{}
			for _, e := range w.f.PendingExport(0, 1000).Ledger {
				switch e.Kind {
				case fsm.LedgerCharge:
					charges[e.VideoID]++
				case fsm.LedgerRefund:
					t.Errorf("refund in the ledger: %+v", e)
				}
			}
			if !reflect.DeepEqual(charges, map[string]int{"v1": 1, "v2": 1, "v3": 1}) {
				t.Fatalf("charges by video %v, want one each", charges)
			}
		})
	}
}

func TestCordonUncordonRules(t *testing.T) {
	w := newWorld(t, applier{"RaftLog", viaLog})
	w.account("acct", fsm.PlanPro, 100)
	w.node("a", 4, true)
	w.video("v1", "acct", 10)
	c := must(w, &fsm.CordonNode{NodeID: "a", Reason: "disk", Now: t0 + sec})
	if c.Maintenance == nil || c.Maintenance.State != fsm.MaintenanceCordoned || c.Maintenance.Since != t0+sec {
		t.Fatalf("cordoned %+v", c.Maintenance)
	}
	if _, ok := w.lease("a", t0+2*sec); ok {
		t.Fatal("a cordoned node was given work")
	}
	// Draining a cordoned node keeps since and the reason; cordoning it
	// again drops the deadline, and a new reason replaces the old.
	d := must(w, &fsm.DrainNode{NodeID: "a", Deadline: t0 + 10*sec, Now: t0 + 3*sec})
	if d.Maintenance.Since != t0+sec || d.Maintenance.Deadline != t0+10*sec || d.Maintenance.Reason != "disk" {
		t.Fatalf("drain of a cordoned node %+v", d.Maintenance)
	}
	c = must(w, &fsm.CordonNode{NodeID: "a", Reason: "disk and fan", Now: t0 + 4*sec})
	if c.Maintenance.State != fsm.MaintenanceCordoned || c.Maintenance.Deadline != 0 || c.Maintenance.Since != t0+sec ||
		c.Maintenance.Reason != "disk and fan" {
		t.Fatalf("cordon of a draining node %+v", c.Maintenance)
	}
	// An agent restarting under a new id keeps its node's mark.
	w.must(&fsm.RegisterNode{NodeID: "a2", Name: "name-a", CredHash: keyHash("node-a2"), Node: farmNode(), Now: t0 + 5*sec})
	if n, ok := w.f.Node("a2"); !ok || n.Maintenance == nil || n.Maintenance.State != fsm.MaintenanceCordoned {
		t.Fatalf("re-registered node %+v", n)
	}
	if _, ok := w.lease("a2", t0+6*sec); ok {
		t.Fatal("a re-registered cordoned node was given work")
	}
	u := must(w, &fsm.UncordonNode{NodeID: "a2", Now: t0 + 7*sec})
	if u.Maintenance != nil {
		t.Fatalf("uncordoned %+v", u.Maintenance)
	}
	if l, ok := w.lease("a2", t0+8*sec); !ok || l.VideoID != "v1" {
		t.Fatalf("uncordoned node got %+v %v", l, ok)
	}
	for _, tc := range []struct {
		cmd  fsm.Command
		want error
	}{
		{&fsm.CordonNode{NodeID: "nope", Now: t0}, scheduler.ErrUnknownNode},
		{&fsm.DrainNode{NodeID: "nope", Deadline: t0, Now: t0}, scheduler.ErrUnknownNode},
		{&fsm.UncordonNode{NodeID: "nope", Now: t0}, scheduler.ErrUnknownNode},
		{&fsm.DrainNode{NodeID: "a2", Deadline: t0 - 1, Now: t0}, fsm.ErrInvalidCommand},
	} {
		if _, err := w.apply(tc.cmd); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.cmd.Type(), err, tc.want)
		}
	}
}

// The mark travels in both snapshot paths: the Raft snapshot stream and the
// state file a node restarts from.
func TestMaintenanceSurvivesSnapshotAndStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	disk, err := fsm.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { disk.Close() }()
	mem := fsm.New()
	index := uint64(0)
	apply := func(c fsm.Command) {
		t.Helper()
		index++
		applyAll(t, index, c, mem, disk)
	}
	for _, id := range []string{"a", "b", "c"} {
		apply(&fsm.RegisterNode{NodeID: id, Name: "name-" + id, CredHash: keyHash("node-" + id), Node: farmNode(), Now: t0})
	}
	apply(&fsm.CordonNode{NodeID: "a", Reason: "fan", Now: t0 + sec})
	apply(&fsm.DrainNode{NodeID: "b", Deadline: t0 + 90*sec, Now: t0 + 2*sec})

	back := restored(t, snapshotBytes(t, mem))
	snapshotBytes(t, disk) // a checkpoint into the file
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}
	if disk, err = fsm.Open(path); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*fsm.FSM{"snapshot": back, "state file": disk} {
		if !reflect.DeepEqual(f.Nodes(), mem.Nodes()) {
			t.Fatalf("%s: nodes differ:\n%+v\n%+v", name, f.Nodes(), mem.Nodes())
		}
		for _, v := range f.Nodes() {
			want := map[string]bool{"a": true, "b": true}[v.Node.ID]
			if v.Info.Cordoned != want || (v.Node.Maintenance != nil) != want {
				t.Fatalf("%s: node %s cordoned %v, maintenance %+v", name, v.Node.ID, v.Info.Cordoned, v.Node.Maintenance)
			}
		}
	}
	if !bytes.Equal(snapshotBytes(t, mem), snapshotBytes(t, disk)) {
		t.Fatal("the restarted state file's snapshot differs from memory's")
	}
}
