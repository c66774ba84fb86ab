package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestEventQueueOrder pops events in (at, seq) order whatever the order they
// were pushed in, ties on time included.
func TestEventQueueOrder(t *testing.T) {
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
			var h eventQueue
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
			if h.len() != 0 {
				t.Fatalf("%d events left", h.len())
			}
		})
	}
}

// TestEventQueueInterleaved pushes and pops as the simulator does (every
// push at or after the last pop, often at the same time) and checks the
// order against a sorted reference.
func TestEventQueueInterleaved(t *testing.T) {
	for _, spread := range []int{1, 3, 1000, 1 << 40} {
		r := rand.New(rand.NewPCG(uint64(spread), 7))
		var q eventQueue
		var ref []event
		var seq uint64
		var now time.Duration
		for step := 0; step < 20000; step++ {
			if r.IntN(3) > 0 || len(ref) == 0 {
				seq++
				e := event{at: now + time.Duration(r.IntN(spread)), seq: seq}
				q.push(e)
				ref = append(ref, e)
				continue
			}
			i := 0
			for j := range ref {
				if ref[j].at < ref[i].at || ref[j].at == ref[i].at && ref[j].seq < ref[i].seq {
					i = j
				}
			}
			want := ref[i]
			ref = slices.Delete(ref, i, i+1)
			got := q.pop()
			if got.at != want.at || got.seq != want.seq {
				t.Fatalf("spread %d step %d: pop = (%v, %d), want (%v, %d)", spread, step, got.at, got.seq, want.at, want.seq)
			}
			now = got.at
			if q.len() != len(ref) {
				t.Fatalf("len %d, want %d", q.len(), len(ref))
			}
		}
	}
}

func TestEventQueuePastPanics(t *testing.T) {
	var q eventQueue
	q.push(event{at: 10, seq: 1})
	q.pop()
	defer func() {
		if recover() == nil {
			t.Fatal("a push before the last pop did not panic")
		}
	}()
	q.push(event{at: 9, seq: 2})
}

func randomAts(n, spread int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(r.IntN(spread))
	}
	return out
}
