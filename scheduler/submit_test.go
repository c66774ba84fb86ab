package scheduler

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// TestSubmitPreparedMatchesSubmit: videos prepared on other goroutines
// and entered in order leave the same state as Submit.
func TestSubmitPreparedMatchesSubmit(t *testing.T) {
	graphs := make([]Graph, 40)
	for i := range graphs {
		info := VideoInfo{ID: fmt.Sprintf("v%d", i), AccountID: fmt.Sprintf("a%d", i%3), Priority: i % 2}
		if i%2 == 0 {
			graphs[i] = ManualGraph(info, gpuReq("m", 1+i%2, 8))
		} else {
			graphs[i] = AutoGraph(info)
		}
	}
	a := newState(t, Config{})
	for i, g := range graphs {
		must(t, a.Submit(g, at(i)))
	}
	prepared := make([]*Prepared, len(graphs))
	var wg sync.WaitGroup
	for i, g := range graphs {
		wg.Go(func() {
			p, err := PrepareSubmit(g)
			if err != nil {
				t.Error(err)
			}
			prepared[i] = p
		})
	}
	wg.Wait()
	b := newState(t, Config{})
	other := newState(t, Config{})
	for i, p := range prepared {
		// Through every kind of account handle: none, the right one, one
		// of another account, one of another State.
		switch i % 4 {
		case 0:
			must(t, b.SubmitPrepared(p, at(i)))
		case 1:
			must(t, b.SubmitPreparedFor(p, b.AccountRef(graphs[i].Video.AccountID), at(i)))
		case 2:
			must(t, b.SubmitPreparedFor(p, b.AccountRef("a0"), at(i)))
		case 3:
			must(t, b.SubmitPreparedFor(p, other.AccountRef(graphs[i].Video.AccountID), at(i)))
		}
	}
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatal("prepared submissions left a different state")
	}
}

func TestSubmitPreparedErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(s *State) error
		want error
	}{
		{"invalid graph", func(s *State) error {
			_, err := PrepareSubmit(Graph{Video: VideoInfo{ID: "v"}, Mode: ModeManual})
			return err
		}, ErrInvalid},
		{"priority out of range", func(s *State) error {
			_, err := PrepareSubmit(AutoGraph(VideoInfo{ID: "v", AccountID: "a", Priority: MaxPriority + 1}))
			return err
		}, ErrInvalid},
		{"submitted twice", func(s *State) error {
			p, err := PrepareSubmit(AutoGraph(VideoInfo{ID: "v", AccountID: "a"}))
			must(t, err)
			must(t, s.SubmitPrepared(p, at(0)))
			return s.SubmitPrepared(p, at(1))
		}, ErrInvalid},
		{"nil", func(s *State) error { return s.SubmitPrepared(nil, at(0)) }, ErrInvalid},
		{"duplicate id", func(s *State) error {
			must(t, s.Submit(AutoGraph(VideoInfo{ID: "v", AccountID: "a"}), at(0)))
			p, err := PrepareSubmit(AutoGraph(VideoInfo{ID: "v", AccountID: "b"}))
			must(t, err)
			return s.SubmitPrepared(p, at(1))
		}, ErrDuplicate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, Config{})
			if err := tc.run(s); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if err := checkInvariants(s); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAddPreparedScenes(t *testing.T) {
	// Two states, one with AddScenes and one with prepared scenes, end the
	// same.
	a, b := newState(t, Config{}), newState(t, Config{})
	for _, s := range []*State{a, b} {
		must(t, s.UpsertNode(gpuNode("n", 1, 24, "m"), at(0)))
		must(t, s.Submit(AutoGraph(VideoInfo{ID: "v", AccountID: "a"}), at(0)))
		plan, err := s.Place("n", at(1), leaseDur)
		must(t, err)
		if plan.Kind != KindPlan {
			t.Fatalf("first lease is %s", plan.Kind)
		}
		if _, err := s.Complete(plan.Ref(), at(2)); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := PrepareScenes("v", 3, gpuReq("m", 1, 8))
	must(t, err)
	must(t, a.AddScenes("v", 3, gpuReq("m", 1, 8), at(3)))
	must(t, b.AddPreparedScenes(ps, at(3)))
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatal("prepared scenes left a different state")
	}
	if err := b.AddPreparedScenes(ps, at(4)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("second add: %v", err)
	}
	again, err := PrepareScenes("v", 1, gpuReq("m", 1, 8))
	must(t, err)
	if err := b.AddPreparedScenes(again, at(4)); !errors.Is(err, ErrWrongState) {
		t.Fatalf("scenes for a video that has them: %v", err)
	}
	other, err := PrepareScenes("nope", 1, gpuReq("m", 1, 8))
	must(t, err)
	if err := b.AddPreparedScenes(other, at(4)); !errors.Is(err, ErrUnknownVideo) {
		t.Fatalf("scenes for an unknown video: %v", err)
	}
	for _, n := range []int{-1, MaxScenes + 1} {
		if _, err := PrepareScenes("v", n, gpuReq("m", 1, 8)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("PrepareScenes(%d): %v", n, err)
		}
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}
