package scheduler

import (
	"fmt"
	"slices"
	"testing"
)

// A take returns exactly what changed since the one before, whether the
// take before it kept its map (a few videos) or replaced it (more than
// takeKeepsMap); and the set keeps tracking after either.
func TestTakeChangedAcrossLargeAndSmallTakes(t *testing.T) {
	s := newState(t, DefaultConfig())
	s.TrackChanges()
	req := gpuReq("m", 1, 24)
	submit := func(prefix string, n int) []string {
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s%05d", prefix, i)
			submitManual(t, s, id, "acct", 0, req, t0)
			ids = append(ids, id)
		}
		return ids
	}
	for _, step := range []struct {
		name string
		n    int
	}{
		{"a large take", takeKeepsMap * 4},
		{"a small take after a large one", 3},
		{"another small take", 5},
		{"a take of exactly the most that keeps the map", takeKeepsMap},
		{"a large take again", takeKeepsMap + 1},
		{"a small take after it", 1},
	} {
		want := submit(fmt.Sprintf("v%d-", step.n), step.n)
		var got []string
		for _, c := range s.TakeChanged() {
			got = append(got, c.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: took %d videos, want the %d just submitted (first %v)", step.name, len(got), len(want), got[:min(3, len(got))])
		}
		if again := s.TakeChanged(); len(again) != 0 {
			t.Fatalf("%s: a second take returned %d videos, want none", step.name, len(again))
		}
	}
}
