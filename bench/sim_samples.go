package bench

import (
	"math"
	"slices"
	"sync"
	"time"
)

// samples collects durations (waits, turnarounds) for exact percentiles.
// A week of a large farm records millions: one growing slice per group
// copied them over and over (growth by a quarter past a few hundred
// elements, so about four copies of every sample: a tenth of the
// simulating goroutine's time), and the report then copied and sorted the
// whole again for the overall group. So they are kept in chunks that never
// move, each recorded once (in its mode and account class's cell:
// recorder.cells); the report sorts each chunk in place, on both cores
// (sortSamples), and a mode's, a class's and the overall group's samples
// share their cells' chunks, read across by binary search.
type samples struct {
	full [][]time.Duration // chunks filled, or shared (addAll)
	cur  []time.Duration   // the chunk add fills
}

// Chunks start small and double up to a cap, so that a short run (a sweep
// makes many) does not pay for large ones.
const (
	minSampleChunk = 256
	maxSampleChunk = 1 << 16
)

func (s *samples) add(d time.Duration) {
	if len(s.cur) == cap(s.cur) {
		s.grow()
	}
	s.cur = append(s.cur, d)
}

func (s *samples) grow() {
	size := minSampleChunk
	if s.cur != nil {
		s.full = append(s.full, s.cur)
		size = min(2*cap(s.cur), maxSampleChunk)
	}
	s.cur = make([]time.Duration, 0, size)
}

// chunks returns every chunk, the one being filled last.
func (s *samples) chunks() [][]time.Duration {
	if len(s.cur) == 0 {
		return s.full
	}
	return append(s.full[:len(s.full):len(s.full)], s.cur)
}

func (s *samples) len() int {
	n := len(s.cur)
	for _, c := range s.full {
		n += len(c)
	}
	return n
}

// addAll adds o's durations to s by sharing its chunks. add writes only to
// s.cur, never to a shared chunk; the capacity clip keeps it so should
// anything ever append to one of s.full's chunks.
func (s *samples) addAll(o *samples) {
	for _, c := range o.chunks() {
		s.full = append(s.full, c[:len(c):len(c)])
	}
}

// sortChunks sorts every chunk in place: the order the methods below need.
func (s *samples) sortChunks() {
	for _, c := range s.chunks() {
		slices.Sort(c)
	}
}

// sortSamples sorts the chunks of all, spread over two goroutines (the
// simulation is over, so the source's core is free).
func sortSamples(all []*samples) {
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
func (s *samples) atMost(x time.Duration) int { return countAtMost(s.chunks(), x) }

func countAtMost(chunks [][]time.Duration, x time.Duration) int {
	n := 0
	for _, c := range chunks {
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
	chunks := s.chunks()
	lo, hi := chunks[0][0], chunks[0][len(chunks[0])-1]
	for _, c := range chunks[1:] {
		lo, hi = min(lo, c[0]), max(hi, c[len(c)-1])
	}
	for lo < hi {
		mid := lo + time.Duration(uint64(hi-lo)/2)
		if countAtMost(chunks, mid) > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// summary summarises the durations; the chunks must be sorted.
func (s *samples) summary() Percentiles {
	n := s.len()
	if n == 0 {
		return Percentiles{NoData: true}
	}
	var sum time.Duration
	for _, c := range s.chunks() {
		for _, d := range c {
			sum += d
		}
	}
	return Percentiles{
		Count: float64(n),
		Mean:  sum.Seconds() / float64(n),
		P50:   s.nth(nearestRank(n, 0.50)).Seconds(),
		P95:   s.nth(nearestRank(n, 0.95)).Seconds(),
		P99:   s.nth(nearestRank(n, 0.99)).Seconds(),
		Max:   s.nth(n - 1).Seconds(),
	}
}
