package scheduler

import (
	"errors"
	"slices"
	"testing"
)

// TestTaskLookup finds tasks by id through their video, including scenes
// moved out of place by a snapshot and ids that name nothing.
func TestTaskLookup(t *testing.T) {
	s := busyState(t)
	must(t, s.Submit(ManualGraph(VideoInfo{ID: "a/b", AccountID: "c"}, gpuReq("ltx", 1, 20)), at(6)))
	snap := s.Snapshot()
	for i := range snap.Videos { // scenes first: the scan must still find them
		vr := &snap.Videos[i]
		if vr.Video.ID == "auto" {
			slices.Reverse(vr.Tasks)
		}
	}
	moved, err := Restore(snap)
	must(t, err)
	must(t, checkInvariants(moved))
	for _, st := range []struct {
		name string
		s    *State
	}{{"live", s}, {"restored", moved}} {
		tests := []struct {
			id   string
			want bool
		}{
			{"auto/plan", true},
			{"auto/composite", true},
			{"auto/scene-0001", true},
			{"auto/scene-0003", true},
			{"auto/scene-0004", false},
			{"auto/scene-0000", false},
			{"auto/scene-01", false},
			{"auto/scene-x001", false},
			{"m1/render", true},
			{"m1/finalize", true},
			{"a/b/render", true},
			{"a/render", false},
			{"b/render", false},
			{"m1/", false},
			{"m1", false},
			{"", false},
			{"nope/render", false},
		}
		for _, tc := range tests {
			got, ok := st.s.Task(tc.id)
			if ok != tc.want || (ok && got.ID != tc.id) {
				t.Errorf("%s: Task(%q) = %q, %v; want found=%v", st.name, tc.id, got.ID, ok, tc.want)
			}
		}
		if n := st.s.Stats().Tasks; n != 2+2+2+6 {
			t.Errorf("%s: Stats().Tasks = %d, want 12", st.name, n)
		}
	}
	if _, err := s.Cancel("a/b", at(7)); err != nil {
		t.Fatal(err)
	}
	must(t, s.Forget("a/b"))
	if _, ok := s.Task("a/b/render"); ok || s.Stats().Tasks != 10 {
		t.Fatalf("after Forget: task still found or %d tasks counted, want 10", s.Stats().Tasks)
	}
	must(t, checkInvariants(s))
}

func TestRestoreRejectsSlashInTaskName(t *testing.T) {
	s := busyState(t)
	snap := s.Snapshot()
	snap.Videos[0].Tasks[0].Name = "x/y"
	if _, err := Restore(snap); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Restore with task name x/y: %v, want ErrInvalid", err)
	}
}

// TestAccountQueueLookup drives one account past maxScanQueues queues (so
// it keeps them in a map too) and back to none, at two priorities, with
// the indexes checked at every step.
func TestAccountQueueLookup(t *testing.T) {
	tests := []struct {
		name   string
		videos int
	}{
		{"scan only", maxScanQueues},
		{"scan then map", 3 * maxScanQueues},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, DefaultConfig())
			must(t, s.UpsertNode(gpuNode("n1", 1, 80, "wan"), at(0)))
			for i := range tc.videos {
				id := "v" + string(rune('a'+i))
				// A class per video: its memory differs.
				submitManual(t, s, id, "acct", i%2, gpuReq("wan", 1, float64(1+i)), at(i))
				must(t, checkInvariants(s))
			}
			a := s.accounts["acct"]
			if got, want := a.byKey != nil, tc.videos > maxScanQueues; got != want {
				t.Fatalf("%d queues: map kept = %v, want %v", len(a.queues), got, want)
			}
			for i := 0; ; i++ { // renders, then the finalizes they make ready
				l, err := s.Place("n1", at(100+i), leaseDur)
				if errors.Is(err, ErrNoWork) {
					break
				}
				must(t, err)
				must(t, checkInvariants(s))
				if _, err := s.Complete(l.Ref(), at(100+i)); err != nil {
					t.Fatal(err)
				}
				must(t, checkInvariants(s))
			}
			if len(a.queues) != 0 || a.byKey != nil {
				t.Fatalf("after placing every render: %d queues, map %v", len(a.queues), a.byKey)
			}
		})
	}
}
