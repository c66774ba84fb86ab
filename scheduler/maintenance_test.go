package scheduler

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCordonedNodeGetsNoWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mark    func(s *State) error
		lift    func(s *State) error
		wantErr string
	}{
		{"cordoned", func(s *State) error { return s.SetCordoned("n", true, at(1)) },
			func(s *State) error { return s.SetCordoned("n", false, at(2)) }, "node n is cordoned"},
		// A cordon outlives what the agent reports: a heartbeat or a new
		// registration that says "not draining" does not lift it.
		{"cordoned, then the agent registers again", func(s *State) error {
			if err := s.SetCordoned("n", true, at(1)); err != nil {
				return err
			}
			return s.UpsertNode(gpuNode("n", 1, 24, "m"), at(1))
		}, func(s *State) error { return s.SetCordoned("n", false, at(2)) }, "node n is cordoned"},
		{"draining (the agent's own)", func(s *State) error { return s.SetDraining("n", true) },
			func(s *State) error { return s.SetDraining("n", false) }, "node n is draining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, Config{})
			must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
			submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
			must(t, tc.mark(s))
			_, err := s.Place("n", at(1), leaseDur)
			if !errors.Is(err, ErrNoWork) || !strings.HasSuffix(err.Error(), tc.wantErr) {
				t.Fatalf("place on a marked node: %v", err)
			}
			if st, _ := s.VideoStatus("v"); st.Reason != ReasonNoNodeFits || !strings.Contains(st.Message, "1 node(s) cordoned or draining") {
				t.Fatalf("reason with the only node marked: %q %q", st.Reason, st.Message)
			}
			must(t, checkInvariants(s))
			must(t, tc.lift(s))
			if l := mustPlace(t, s, "n", at(2)); l.VideoID != "v" {
				t.Fatalf("after the mark is lifted: %+v", l)
			}
			must(t, checkInvariants(s))
		})
	}
}

// twoGPUNodeWithTwoVideos is a state with node id (two GPUs) and two
// queued one-GPU videos, v1 and v2, of one account.
func twoGPUNodeWithTwoVideos(t *testing.T, id string) *State {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode(id, 2, 24, "m"), at(0)))
	submitManual(t, s, "v1", "acct", 0, gpuReq("m", 1, 8), at(0))
	submitManual(t, s, "v2", "acct", 0, gpuReq("m", 1, 8), at(0))
	return s
}

func TestCordonKeepsRunningLeases(t *testing.T) {
	s := twoGPUNodeWithTwoVideos(t, "n")
	l := mustPlace(t, s, "n", at(0))
	must(t, s.SetCordoned("n", true, at(1)))
	if _, err := s.Place("n", at(1), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("a cordoned node with a free GPU was given work: %v", err)
	}
	if _, err := s.Heartbeat("n", []LeaseRef{{TaskID: l.TaskID, NodeID: "n", Token: l.Token}}, at(2), leaseDur); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(LeaseRef{TaskID: l.TaskID, NodeID: "n", Token: l.Token}, at(3)); err != nil {
		t.Fatalf("a cordoned node could not complete its running task: %v", err)
	}
	if info, _ := s.Node("n"); !info.Cordoned || info.Leases != 0 {
		t.Fatalf("node %+v", info)
	}
	must(t, checkInvariants(s))
}

func TestHandBackRequeuesWithoutFailure(t *testing.T) {
	s := twoGPUNodeWithTwoVideos(t, "a")
	l1 := mustPlace(t, s, "a", at(0))
	l2 := mustPlace(t, s, "a", at(0))
	must(t, s.SetCordoned("a", true, at(1)))
	if held := s.NodeLeases("a"); len(held) != 2 || held[0].Token != l1.Token || held[1].Token != l2.Token {
		t.Fatalf("node leases %+v", held)
	}
	back, err := s.HandBack("a", at(5))
	must(t, err)
	if len(back) != 2 || back[0].Token != l1.Token || back[1].Token != l2.Token {
		t.Fatalf("handed back %+v", back)
	}
	for _, l := range back {
		tk, _ := s.Task(l.TaskID)
		if tk.State != TaskReady || tk.Failures != 0 || len(tk.FailedNodes) != 0 {
			t.Fatalf("task after hand-back %+v", tk)
		}
	}
	// The old holder's reports are stale; the work goes to another node.
	if _, err := s.Complete(LeaseRef{TaskID: l1.TaskID, NodeID: "a", Token: l1.Token}, at(6)); !isStale(err) {
		t.Fatalf("late completion from the drained node: %v", err)
	}
	must(t, s.UpsertNode(gpuNode("b", 1, 24, "m"), at(6)))
	if l := mustPlace(t, s, "b", at(6)); l.TaskID != l1.TaskID {
		t.Fatalf("node b got %s, want the older %s", l.TaskID, l1.TaskID)
	}
	if info, _ := s.Node("a"); info.Leases != 0 || !info.Cordoned || len(s.NodeLeases("a")) != 0 {
		t.Fatalf("drained node %+v", info)
	}
	if _, err := s.HandBack("nope", at(6)); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("hand back from an unknown node: %v", err)
	}
	must(t, checkInvariants(s))
}

func TestUncordonReleasesRetryingTask(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("a", 1, 24, "m"), at(0)))
	must(t, s.UpsertNode(gpuNode("b", 1, 24, "m"), at(0)))
	must(t, s.SetCordoned("b", true, at(0)))
	submitManual(t, s, "v", "acct", 0, gpuReq("m", 1, 8), at(0))
	l := mustPlace(t, s, "a", at(0))
	// a failed it and b is cordoned: no live node is left to try, so it waits.
	out, err := s.FailWithBackoff(LeaseRef{TaskID: l.TaskID, NodeID: "a", Token: l.Token}, "boom", at(1), 60*leaseDur)
	must(t, err)
	if tk, _ := s.Task(l.TaskID); tk.State != TaskRetrying || !out.Requeued {
		t.Fatalf("task %+v, outcome %+v", tk, out)
	}
	must(t, s.SetCordoned("b", false, at(2)))
	if got := mustPlace(t, s, "b", at(2)); got.TaskID != l.TaskID {
		t.Fatalf("uncordoned node got %+v", got)
	}
	must(t, checkInvariants(s))
}

func TestCordonSurvivesSnapshot(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("a", 1, 24, "m"), at(0)))
	must(t, s.UpsertNode(gpuNode("b", 1, 24, "m"), at(0)))
	must(t, s.SetCordoned("b", true, at(0)))
	raw, err := json.Marshal(s.Snapshot())
	must(t, err)
	var snap Snapshot
	must(t, json.Unmarshal(raw, &snap))
	back, err := Restore(snap)
	must(t, err)
	if !reflect.DeepEqual(back.Nodes(), s.Nodes()) {
		t.Fatalf("nodes after a round trip:\n%+v\n%+v", back.Nodes(), s.Nodes())
	}
	submitManual(t, back, "v", "acct", 0, gpuReq("m", 1, 8), at(1))
	if _, err := back.Place("b", at(1), leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("restored cordoned node was given work: %v", err)
	}
	mustPlace(t, back, "a", at(1))
	must(t, checkInvariants(back))
}

func TestSetCordonedUnknownNode(t *testing.T) {
	s := newState(t, Config{})
	if err := s.SetCordoned("nope", true, at(0)); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("cordon of an unknown node: %v", err)
	}
}
