package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSamplesAgainstSortedSlice checks the chunked samples' summary, ranks
// and counts against one sorted slice, across chunk boundaries, with ties
// and with the overall group's shared chunks.
func TestSamplesAgainstSortedSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 255, 256, 257, 5000, 3*maxSampleChunk + 17} {
		for _, spread := range []int{1, 3, 1_000_000} {
			var a, b, all samples
			var ref []time.Duration
			for i := range n {
				d := time.Duration(r.IntN(spread))
				if i%3 == 0 {
					b.add(d)
				} else {
					a.add(d)
				}
				ref = append(ref, d)
			}
			slices.Sort(ref)
			all.addAll(&a)
			all.addAll(&b)
			sortSamples([]*samples{&a, &b}) // after addAll: the chunks are shared
			if all.len() != n {
				t.Fatalf("n %d: len %d", n, all.len())
			}
			var sum time.Duration
			for _, d := range ref {
				sum += d
			}
			want := Percentiles{Count: float64(n), Mean: sum.Seconds() / float64(n),
				P50: percentile(ref, 0.50).Seconds(), P95: percentile(ref, 0.95).Seconds(),
				P99: percentile(ref, 0.99).Seconds(), Max: ref[n-1].Seconds()}
			if got := all.summary(); got != want {
				t.Fatalf("n %d spread %d: summary %+v, want %+v", n, spread, got, want)
			}
			for _, i := range []int{0, n / 7, n / 2, n - 1} {
				if got := all.nth(i); got != ref[i] {
					t.Fatalf("n %d spread %d: nth(%d) = %v, want %v", n, spread, i, got, ref[i])
				}
			}
			for _, x := range []time.Duration{-1, 0, 1, time.Duration(spread / 2), time.Duration(spread)} {
				want, _ := slices.BinarySearch(ref, x+1)
				if got := all.atMost(x); got != want {
					t.Fatalf("n %d spread %d: atMost(%v) = %d, want %d", n, spread, x, got, want)
				}
			}
		}
	}
}

func TestSamplesEmpty(t *testing.T) {
	var s samples
	// Nothing measured: zeros that say so, not instant service.
	if got := s.summary(); got != (Percentiles{NoData: true}) {
		t.Fatalf("summary of none = %+v", got)
	}
	if got := s.atMost(5); got != 0 {
		t.Fatalf("atMost = %d", got)
	}
}

// TestSharedChunksStayTheirOwners: after addAll, adding to either side
// never writes into the other's samples. The group's adds start a chunk of
// its own (the shared ones are clipped to their length), and the cell's
// adds go past the length the group saw.
func TestSharedChunksStayTheirOwners(t *testing.T) {
	var cell, group samples
	for i := range 10 {
		cell.add(time.Duration(i))
	}
	group.addAll(&cell)
	for i := range 5 {
		group.add(time.Duration(100 + i))
		cell.add(time.Duration(200 + i))
	}
	wantCell := []time.Duration{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 200, 201, 202, 203, 204}
	wantGroup := []time.Duration{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104}
	for _, c := range []struct {
		name string
		s    *samples
		want []time.Duration
	}{{"cell", &cell, wantCell}, {"group", &group, wantGroup}} {
		if got := slices.Concat(c.s.chunks()...); !slices.Equal(got, c.want) {
			t.Errorf("%s holds %v, want %v", c.name, got, c.want)
		}
	}
	// Even an append to a shared chunk itself (nothing does one today)
	// leaves the cell's samples alone: the clip makes it copy.
	shared := group.full[0]
	_ = append(shared, 999)
	if got := slices.Concat(cell.chunks()...); !slices.Equal(got, wantCell) {
		t.Errorf("an append to the group's shared chunk changed the cell: %v", got)
	}
}
