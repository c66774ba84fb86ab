package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTaskSetAgainstSortedSlice adds and removes tasks at random, growing
// the set past smallTasks into the B-tree and emptying it back, and checks
// Len, Min, Rank and Items against a sorted slice after every step.
func TestTaskSetAgainstSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	var s taskSet
	var ref []*task
	next, usedTree := 0, false
	for step := range 20_000 {
		// Grow for a while, then shrink to empty, so both forms are crossed.
		grow := (step/2000)%2 == 0
		if len(ref) > 0 && (rng.IntN(10) < 3 || !grow) {
			u := ref[rng.IntN(len(ref))]
			s.Remove(u)
			ref = slices.DeleteFunc(ref, func(x *task) bool { return x == u })
		} else {
			// Ages out of order, as retries and dependencies make them.
			u := &task{sub: int64(rng.IntN(50)), seq: uint64(next), idx: int32(rng.IntN(3))}
			next++
			s.Add(u)
			ref = append(ref, u)
			slices.SortFunc(ref, func(a, b *task) int {
				if a.older(b) {
					return -1
				}
				return 1
			})
		}
		usedTree = usedTree || s.big != nil
		if s.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(ref))
		}
		if len(ref) == 0 {
			if s.Min() != nil || s.big != nil {
				t.Fatalf("step %d: an empty set has a head or a tree", step)
			}
			continue
		}
		if s.Min() != ref[0] {
			t.Fatalf("step %d: wrong head", step)
		}
		if !slices.Equal(s.Items(), ref) {
			t.Fatalf("step %d: items out of order", step)
		}
		for _, i := range []int{0, len(ref) / 2, len(ref) - 1} {
			if r := s.Rank(ref[i]); r != i {
				t.Fatalf("step %d: rank %d, want %d (len %d, tree %v)", step, r, i, len(ref), s.big != nil)
			}
		}
	}
	if !usedTree {
		t.Fatal("the set never grew into the B-tree")
	}
}
