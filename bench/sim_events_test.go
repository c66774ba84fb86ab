package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestEventHeapOrder pops events in (at, seq) order whatever the order they
// were pushed in, ties on time included.
func TestEventHeapOrder(t *testing.T) {
	tests := []struct {
		name string
		ats  []time.Duration
	}{
		{"empty", nil},
		{"one", []time.Duration{5}},
		{"ascending", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"descending", []time.Duration{9, 8, 7, 6, 5, 4, 3, 2, 1}},
		{"all tied", []time.Duration{3, 3, 3, 3, 3, 3}},
		{"random with ties", randomAts(1000, 50)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h eventHeap
			var want []event
			for i, at := range tc.ats {
				e := event{at: at, seq: uint64(i + 1)}
				h.push(e)
				want = append(want, e)
			}
			slices.SortFunc(want, func(a, b event) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return int(a.seq) - int(b.seq)
			})
			for i, w := range want {
				if got := h.pop(); got.at != w.at || got.seq != w.seq {
					t.Fatalf("pop %d = (%v, %d), want (%v, %d)", i, got.at, got.seq, w.at, w.seq)
				}
			}
			if len(h) != 0 {
				t.Fatalf("%d events left", len(h))
			}
		})
	}
}

func randomAts(n, spread int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(r.IntN(spread))
	}
	return out
}
