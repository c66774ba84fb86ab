package scheduler

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func roundTrip(tb fataler, s *State) *State {
	tb.Helper()
	raw, err := json.Marshal(s.Snapshot())
	must(tb, err)
	var snap Snapshot
	must(tb, json.Unmarshal(raw, &snap))
	r, err := Restore(snap)
	must(tb, err)
	return r
}

func busyState(tb fataler) *State {
	s := newState(tb, DefaultConfig())
	must(tb, s.UpsertNode(gpuNode("n1", 2, 48, "wan", "ltx"), at(0)))
	must(tb, s.UpsertNode(gpuNode("n2", 1, 24, "ltx"), at(0)))
	must(tb, s.Submit(AutoGraph(VideoInfo{ID: "auto", AccountID: "a", Priority: 1}), at(0)))
	submitManual(tb, s, "m1", "b", 0, gpuReq("ltx", 1, 20), at(1))
	submitManual(tb, s, "m2", "b", 0, gpuReq("wan", 1, 40), at(2))
	plan := mustPlace(tb, s, "n1", at(3))
	_, err := s.Complete(plan.Ref(), at(4))
	must(tb, err)
	must(tb, s.AddScenes("auto", 3, gpuReq("wan", 1, 40), at(4)))
	l := mustPlace(tb, s, "n1", at(5))
	must(tb, s.Progress(l.Ref(), 42))
	mustPlace(tb, s, "n2", at(5))
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := busyState(t)
	r := roundTrip(t, s)
	if !reflect.DeepEqual(s.Snapshot(), r.Snapshot()) {
		t.Fatalf("snapshots differ:\n%+v\n%+v", s.Snapshot(), r.Snapshot())
	}
	must(t, checkInvariants(r))
	// Both continue identically.
	for i := range 6 {
		a, errA := s.Place("n1", at(10+i), leaseDur)
		b, errB := r.Place("n1", at(10+i), leaseDur)
		if !reflect.DeepEqual(a, b) || (errA == nil) != (errB == nil) {
			t.Fatalf("step %d: %+v %v vs %+v %v", i, a, errA, b, errB)
		}
		ea, eb := s.Expire(at(40+i)), r.Expire(at(40+i))
		if !reflect.DeepEqual(ea, eb) {
			t.Fatalf("expire %d differs", i)
		}
	}
	if !reflect.DeepEqual(s.Snapshot(), r.Snapshot()) {
		t.Fatal("states diverged")
	}
}

func TestCloneIsIndependent(t *testing.T) {
	s := busyState(t)
	before := s.Snapshot()
	c := s.Clone()
	_, _ = c.Place("n1", at(9), leaseDur)
	_, _ = c.Cancel("m1", at(9))
	must(t, c.UpsertNode(gpuNode("n3", 8, 80, "wan"), at(9)))
	if !reflect.DeepEqual(before, s.Snapshot()) {
		t.Fatal("changing the clone changed the original")
	}
	must(t, checkInvariants(c))
	must(t, checkInvariants(s))
}

func TestRestoreRejectsBadSnapshots(t *testing.T) {
	good := busyState(t).Snapshot()
	cases := map[string]func(*Snapshot){
		"version":      func(s *Snapshot) { s.Version = 99 },
		"dup node":     func(s *Snapshot) { s.Nodes = append(s.Nodes, s.Nodes[0]) },
		"dangling dep": func(s *Snapshot) { s.Videos[1].Tasks[1].Deps = []string{"nope"} },
		"lease node": func(s *Snapshot) {
			for i := range s.Videos[0].Tasks {
				if l := s.Videos[0].Tasks[i].Lease; l != nil {
					l.NodeID = "ghost"
				}
			}
		},
		"token beyond counter": func(s *Snapshot) { s.NextToken = 0 },
		// A task keeps its attempts as an int32 and reads whether it awaits
		// scenes from its video's one gate: a record beyond either is refused,
		// not cut short or half kept.
		"attempts beyond int32": func(s *Snapshot) { autoRecord(t, s).Tasks[0].Attempts = 1 << 31 },
		"negative attempts":     func(s *Snapshot) { autoRecord(t, s).Tasks[0].Attempts = -1 },
		"two tasks await scenes": func(s *Snapshot) {
			r := autoRecord(t, s)
			for i := range r.Tasks {
				r.Tasks[i].AwaitsScenes = true
			}
		},
	}
	for name, mutate := range cases {
		raw, _ := json.Marshal(good)
		var snap Snapshot
		must(t, json.Unmarshal(raw, &snap))
		mutate(&snap)
		if _, err := Restore(snap); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

// autoRecord is busyState's auto video in snap.
func autoRecord(t *testing.T, snap *Snapshot) *VideoRecord {
	t.Helper()
	for i := range snap.Videos {
		if snap.Videos[i].Video.ID == "auto" {
			return &snap.Videos[i]
		}
	}
	t.Fatal("no auto video in the snapshot")
	return nil
}
