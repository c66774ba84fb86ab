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
			g, errB := b.PlaceGrant(n, at(10+step), leaseDur)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("step %d node %s: Place err %v, PlaceGrant err %v", step, n, errA, errB)
			}
			if errA != nil {
				if !errors.Is(errB, ErrNoWork) {
					t.Fatalf("PlaceGrant: %v", errB)
				}
				continue
			}
			want := Grant{Ref: l.Ref(), VideoID: l.VideoID, Kind: l.Kind, GPUs: l.Req.GPUs, CPUSlots: l.Req.CPUSlots, Model: l.Req.Model}
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
			outB, err := b.CompleteGrant(grants[0], at(10+step))
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
			if _, err := s.PlaceGrant("n2", at(101), leaseDur); err != nil {
				t.Fatal(err)
			}
			return s
		}, ErrStaleLease, false},
		{"completed already", func(t *testing.T, s *State, g Grant) *State {
			if _, err := s.CompleteGrant(g, at(5)); err != nil {
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
			g, err := s.PlaceGrant("n1", at(0), leaseDur)
			must(t, err)
			target := tc.lose(t, s, g)
			out, err := target.CompleteGrant(g, at(200))
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
