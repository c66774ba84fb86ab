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
	for i, p := range prepared {
		must(t, b.SubmitPrepared(p, at(i)))
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
