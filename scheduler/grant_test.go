package scheduler

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestPlaceGrantMatchesPlace: two states fed the same calls, one through
// Place/Complete and one through PlaceGrant/CompleteGrant, grant the same
// leases and end in the same snapshot.
func TestPlaceGrantMatchesPlace(t *testing.T) {
	a := newState(t, Config{})
	b := newState(t, Config{})
	for _, s := range []*State{a, b} {
		must(t, s.UpsertNode(gpuNode("n1", 2, 24, "m"), at(0)))
		must(t, s.UpsertNode(gpuNode("n2", 1, 48, "m"), at(0)))
		submitManual(t, s, "v1", "acct-a", 0, gpuReq("m", 2, 16), at(0))
		submitManual(t, s, "v2", "acct-b", 0, gpuReq("m", 1, 40), at(1))
		must(t, s.Submit(AutoGraph(VideoInfo{ID: "v3", AccountID: "acct-a"}), at(2)))
	}
	var grants []Grant
	var leases []Lease
	for step := 0; step < 20; step++ {
		progressed := false
		for _, n := range []string{"n1", "n2"} {
			l, errA := a.Place(n, at(10+step), leaseDur)
			g, errB := placeGrant(b, n, at(10+step), leaseDur)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("step %d node %s: Place err %v, PlaceGrant err %v", step, n, errA, errB)
			}
			if errA != nil {
				if !errors.Is(errB, ErrNoWork) {
					t.Fatalf("PlaceGrant: %v", errB)
				}
				continue
			}
			seq := map[string]uint64{"v1": 1, "v2": 2, "v3": 3}[l.VideoID] // submission order
			want := Grant{Ref: l.Ref(), VideoID: l.VideoID, Kind: l.Kind, GPUs: l.Req.GPUs, CPUSlots: l.Req.CPUSlots, Model: l.Req.Model, VideoSeq: seq}
			got := g
			got.t, got.state = nil, nil
			if got != want {
				t.Fatalf("grant %+v, lease says %+v", got, want)
			}
			leases, grants = append(leases, l), append(grants, g)
			progressed = true
		}
		// Finish the oldest lease on each side.
		if len(leases) > 0 {
			outA, err := a.Complete(leases[0].Ref(), at(10+step))
			must(t, err)
			outB, err := b.CompleteGrant(&grants[0], at(10+step))
			must(t, err)
			if !reflect.DeepEqual(outA, outB) {
				t.Fatalf("outcomes differ: %+v vs %+v", outA, outB)
			}
			if outA.NeedsScenes {
				for _, s := range []*State{a, b} {
					must(t, s.AddScenes(outA.VideoID, 2, gpuReq("m", 1, 8), at(10+step)))
				}
			}
			leases, grants = leases[1:], grants[1:]
			progressed = true
		}
		if !progressed {
			break
		}
	}
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatal("the two states differ after the same work")
	}
	if st := b.Stats(); st.Videos != 3 || st.ReadyTasks != 0 || st.LeasedTasks != 0 {
		t.Fatalf("not everything ran: %+v", st)
	}
}

// TestCompleteGrantFencing: a grant whose lease is no longer current is
// refused like its ref, whichever way it lost the lease.
func TestCompleteGrantFencing(t *testing.T) {
	tests := []struct {
		name string
		// lose ends g's lease; it returns the state to complete on.
		lose func(t *testing.T, s *State, g Grant) *State
		want error
		dup  bool
	}{
		{"current", func(t *testing.T, s *State, g Grant) *State { return s }, nil, false},
		{"expired and re-leased", func(t *testing.T, s *State, g Grant) *State {
			s.Expire(at(100))
			must(t, s.UpsertNode(gpuNode("n2", 1, 24, "m"), at(100)))
			if _, err := placeGrant(s, "n2", at(101), leaseDur); err != nil {
				t.Fatal(err)
			}
			return s
		}, ErrStaleLease, false},
		{"completed already", func(t *testing.T, s *State, g Grant) *State {
			if _, err := s.CompleteGrant(&g, at(5)); err != nil {
				t.Fatal(err)
			}
			return s
		}, nil, true},
		{"video cancelled", func(t *testing.T, s *State, g Grant) *State {
			if _, err := s.Cancel(g.VideoID, at(5)); err != nil {
				t.Fatal(err)
			}
			return s
		}, ErrStaleLease, false},
		{"video forgotten", func(t *testing.T, s *State, g Grant) *State {
			if _, err := s.Cancel(g.VideoID, at(5)); err != nil {
				t.Fatal(err)
			}
			must(t, s.Forget(g.VideoID))
			return s
		}, ErrUnknownTask, false},
		{"restored copy", func(t *testing.T, s *State, g Grant) *State {
			r, err := Restore(s.Snapshot())
			must(t, err)
			return r // g's task is s's, not r's: found by id, still current
		}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, Config{NodeTimeout: time.Hour})
			must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
			submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
			g, err := placeGrant(s, "n1", at(0), leaseDur)
			must(t, err)
			target := tc.lose(t, s, g)
			out, err := target.CompleteGrant(&g, at(200))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CompleteGrant: %v, want %v", err, tc.want)
			}
			if out.Duplicate != tc.dup {
				t.Fatalf("duplicate %v, want %v", out.Duplicate, tc.dup)
			}
			if err == nil && !tc.dup {
				if tk, _ := target.Task(g.Ref.TaskID); tk.State != TaskDone {
					t.Fatalf("task is %s after completion", tk.State)
				}
				if tk, _ := s.Task(g.Ref.TaskID); target != s && tk.State == TaskDone {
					t.Fatal("completing on the restored copy changed the original")
				}
			}
		})
	}
}

// placeGrant is PlaceGrant on node id, as a driver that keeps no NodeRef
// would call it.
func placeGrant(s *State, id string, now time.Time, dur time.Duration) (Grant, error) {
	r, err := s.NodeRef(id)
	if err != nil {
		return Grant{}, err
	}
	var g Grant
	err = s.PlaceGrant(r, now, dur, &g)
	return g, err
}

// TestNodeRefOutlivesItsRecord: a NodeRef taken before its node was
// removed places on the node registered again under its id, fails like
// Place while none is, and works on a restored copy (found by id).
func TestNodeRefOutlivesItsRecord(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	ref, err := s.NodeRef("n1")
	must(t, err)
	if ref.ID() != "n1" {
		t.Fatalf("ID %q", ref.ID())
	}
	if _, err := s.NodeRef("nope"); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("NodeRef of an unknown node: %v", err)
	}
	submitManual(t, s, "v1", "a", 0, gpuReq("m", 1, 8), at(0))
	submitManual(t, s, "v2", "a", 0, gpuReq("m", 1, 8), at(0))
	submitManual(t, s, "v3", "a", 0, gpuReq("m", 1, 8), at(0))
	if _, err := s.RemoveNode("n1", at(1)); err != nil {
		t.Fatal(err)
	}
	var g Grant
	if err := s.PlaceGrant(ref, at(2), leaseDur, &g); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("PlaceGrant on a removed node: %v, want ErrUnknownNode", err)
	}
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(3)))
	must(t, s.PlaceGrant(ref, at(4), leaseDur, &g))
	if g.Ref.NodeID != "n1" || g.VideoID != "v1" {
		t.Fatalf("grant %+v", g)
	}
	if l, ok := s.Node("n1"); !ok || l.Leases != 1 {
		t.Fatalf("the registered node holds %+v", l)
	}
	_, err = s.CompleteGrant(&g, at(5))
	must(t, err)
	r, err := Restore(s.Snapshot())
	must(t, err)
	must(t, r.PlaceGrant(ref, at(6), leaseDur, &g))
	if g.state != r || g.Ref.NodeID != "n1" {
		t.Fatalf("restored copy granted %+v", g)
	}
	if err := s.PlaceGrant(ref, at(6), -time.Second, &g); err == nil {
		t.Fatal("a negative lease was granted")
	}
}
