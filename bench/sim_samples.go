package bench

import (
	"math"
	"slices"
	"sync"
	"time"
)

// samples collects a group's durations (waits, turnarounds) for exact
// percentiles. A week of a large farm records millions per group: one
// growing slice copied them over and over (growth by a quarter past a few
// hundred elements, so about four copies of every sample: a tenth of the
// simulating goroutine's time), and the report then copied and sorted the
// whole again for the overall group. So they are kept in chunks that never
// move; the report sorts each chunk in place (on every core: sortSamples)
// and reads ranks and counts across the sorted chunks by binary search, and
// the overall group shares the modes' chunks instead of copying them.
type samples struct {
	chunks [][]time.Duration
	n      int
}

// Chunks start small and double up to a cap, so that a short run (a sweep
// makes many) does not pay for large ones.
const (
	minSampleChunk = 256
	maxSampleChunk = 1 << 16
)

func (s *samples) len() int { return s.n }

func (s *samples) add(d time.Duration) {
	last := len(s.chunks) - 1
	if last < 0 || len(s.chunks[last]) == cap(s.chunks[last]) {
		s.chunks = append(s.chunks, make([]time.Duration, 0, min(max(s.n, minSampleChunk), maxSampleChunk)))
		last++
	}
	s.chunks[last] = append(s.chunks[last], d)
	s.n++
}

// addAll adds o's durations to s by sharing its chunks, capacity clipped
// so that a later add to s starts a chunk of its own.
func (s *samples) addAll(o *samples) {
	for _, c := range o.chunks {
		s.chunks = append(s.chunks, c[:len(c):len(c)])
	}
	s.n += o.n
}

// sortChunks sorts every chunk in place: the order the methods below need.
func (s *samples) sortChunks() {
	for _, c := range s.chunks {
		slices.Sort(c)
	}
}

// sortSamples sorts the chunks of the groups' samples, the groups spread
// over as many goroutines as there are cores (the simulation is over, so
// the source's core is free).
func sortSamples(groups []*groupRec) {
	var all []*samples
	for _, g := range groups {
		all = append(all, &g.wait, &g.gpuWait, &g.turnaround)
	}
	var wg sync.WaitGroup
	const workers = 2
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(all); i += workers {
				all[i].sortChunks()
			}
		})
	}
	wg.Wait()
}

// atMost counts the durations <= x; the chunks must be sorted.
func (s *samples) atMost(x time.Duration) int {
	n := 0
	for _, c := range s.chunks {
		if x == math.MaxInt64 {
			n += len(c)
			continue
		}
		i, _ := slices.BinarySearch(c, x+1) // the first above x
		n += i
	}
	return n
}

// nth returns the i-th smallest duration (from 0; i < s.len()): the
// smallest value that at least i+1 durations are at most. The chunks must
// be sorted.
func (s *samples) nth(i int) time.Duration {
	lo, hi := s.chunks[0][0], s.chunks[0][len(s.chunks[0])-1]
	for _, c := range s.chunks[1:] {
		lo, hi = min(lo, c[0]), max(hi, c[len(c)-1])
	}
	for lo < hi {
		mid := lo + time.Duration(uint64(hi-lo)/2)
		if s.atMost(mid) > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// summary summarises the durations; the chunks must be sorted.
func (s *samples) summary() Percentiles {
	if s.n == 0 {
		return Percentiles{}
	}
	var sum time.Duration
	for _, c := range s.chunks {
		for _, d := range c {
			sum += d
		}
	}
	return Percentiles{
		Count: s.n,
		Mean:  sum.Seconds() / float64(s.n),
		P50:   s.nth(nearestRank(s.n, 0.50)).Seconds(),
		P95:   s.nth(nearestRank(s.n, 0.95)).Seconds(),
		P99:   s.nth(nearestRank(s.n, 0.99)).Seconds(),
		Max:   s.nth(s.n - 1).Seconds(),
	}
}
