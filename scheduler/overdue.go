package scheduler

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// OverdueLease is a task that has run longer under its lease than the
// given quantile of its class's recent service times.
type OverdueLease struct {
	Lease
	// Running is how long it has run (now - GrantedAt); Quantile the
	// class's service time it is past, from Samples completed tasks.
	Running, Quantile time.Duration
	Samples           int
}

// Overdue lists the leases that have run longer than the q-th quantile
// (nearest rank, 0 < q <= 1) of their class's service times: the class's
// latest completed tasks, at most 64 (so a q of 0.99 over a full window is
// the slowest of them). A class with fewer than minSamples completions
// since this state was built says nothing. Longest past first. Its cost is
// one pass over the leases and a sort of each class's window.
func (s *State) Overdue(now time.Time, q float64, minSamples int) []OverdueLease {
	at := ms(now)
	quantiles := map[*class]int64{}
	var out []OverdueLease
	for _, e := range s.leaseHeap {
		t := e.t
		c := t.cls
		took := c.took.values()
		if len(took) < max(minSamples, 1) {
			continue
		}
		p, ok := quantiles[c]
		if !ok {
			sorted := slices.Sorted(slices.Values(took))
			rank := int(math.Ceil(q*float64(len(sorted)))) - 1
			p = sorted[min(max(rank, 0), len(sorted)-1)]
			quantiles[c] = p
		}
		if run := at - t.lease.granted; run > p {
			out = append(out, OverdueLease{Lease: t.leaseInfo(), Running: time.Duration(run) * time.Millisecond,
				Quantile: time.Duration(p) * time.Millisecond, Samples: len(took)})
		}
	}
	slices.SortFunc(out, func(a, b OverdueLease) int {
		return cmp.Or(cmp.Compare(b.Running-b.Quantile, a.Running-a.Quantile), cmp.Compare(a.Token, b.Token))
	})
	return out
}
