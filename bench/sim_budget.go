package bench

import (
	"fmt"
	"math"
	"runtime"
	"slices"
)

// Memory. A run keeps a few samples of every video it counts (waits,
// turnaround, each GPU task's wait) and, for every video not finished,
// its records in the scheduler and the simulator. Measured on the example
// farm (bench/examples, --replications 1, /usr/bin/time -v's maximum
// resident set, GOGC 400 as the command sets it): a farm that keeps up
// costs about 220 bytes per simulated video (48 h, 115,000 videos: 97 MB;
// 384 h, 922,000: 273 MB; the 1,000-GPU week, 1,680,000: 392 MB), a
// video still waiting at the end about 2,400 bytes (rate 100,000 an hour:
// 2 h, 108,000 waiting: 293 MB; 6 h, 311,000: 779 MB). So:
const (
	// maxSimVideos bounds the videos one run may be expected to make,
	// warm-up included: 8 million finished videos are about 1.8 GB. A
	// slip of units (rate_per_hour 1e6, 8,760 hours) is refused at once
	// instead of running for minutes until the kernel kills it.
	maxSimVideos = 8_000_000
	// simBytesPerVideo and simBytesPerWaiting are the measurements above.
	simBytesPerVideo   = 220
	simBytesPerWaiting = 2400
)

// maxSimWaiting bounds the videos waiting at once in a run: 400,000 are
// about 1 GB. Only an overloaded farm gets near it, and its queue grows
// until the end of the run; the run stops with ErrSimTooLarge then. A
// variable so that a test reaches it without 400,000 arrivals.
var maxSimWaiting = 400_000

// expectedVideos is the mean number of videos a's process makes in
// hours: the integral of its rate, the diurnal cycle and bursts included.
func expectedVideos(a Arrival, hours float64) float64 {
	amp := 0.0
	if a.Process == "diurnal" {
		amp = a.Amplitude
	}
	// base is the integral of the rate without bursts from 0 to h.
	base := func(h float64) float64 {
		return a.RatePerHour * (h + amp*24/(2*math.Pi)*(math.Sin(2*math.Pi*(h-a.PeakHour)/24)+math.Sin(2*math.Pi*a.PeakHour/24)))
	}
	// Between two consecutive burst edges the bursts' product is constant.
	edges := []float64{0, hours}
	for _, b := range a.Bursts {
		edges = append(edges, min(max(b.StartHour, 0), hours), min(b.StartHour+b.Minutes/60, hours))
	}
	slices.Sort(edges)
	total := 0.0
	for i := 1; i < len(edges); i++ {
		lo, hi := edges[i-1], edges[i]
		if hi <= lo {
			continue
		}
		mid, mult := (lo+hi)/2, 1.0
		for _, b := range a.Bursts {
			if mid >= b.StartHour && mid < b.StartHour+b.Minutes/60 {
				mult *= b.Multiplier
			}
		}
		total += mult * (base(hi) - base(lo))
	}
	return total
}

// checkVideos refuses a run expected to make more than maxSimVideos
// videos, and returns the expectation.
func checkVideos(wl Workload, hours float64) (float64, error) {
	n := expectedVideos(wl.Arrival, hours)
	if !(n <= maxSimVideos) {
		return n, fieldErr("hours", "a run of %g h at %g videos an hour (after any --scale-arrivals, bursts included) would make about %.3g videos, "+
			"more than the %d one run may (about %.1f GB at %d bytes a video); shorten --hours or lower workload.arrival.rate_per_hour",
			hours, wl.Arrival.RatePerHour, n, maxSimVideos, float64(maxSimVideos)*simBytesPerVideo/1e9, simBytesPerVideo)
	}
	return n, nil
}

// runsAtOnce is how many runs of about perRun videos each may run in
// parallel (par, 0 meaning GOMAXPROCS): no more than fit maxSimVideos
// together, so that replications on many cores do not multiply a run's
// memory by the core count; at least one. The order of the results does
// not depend on it.
func runsAtOnce(perRun float64, par int) int {
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	if perRun <= 0 {
		return par
	}
	return max(1, min(par, int(maxSimVideos/perRun)))
}

// errTooManyWaiting is the error of a run whose queue outgrew maxSimWaiting.
func errTooManyWaiting(waiting int, at, horizon float64) error {
	return fmt.Errorf("%w: %d videos waiting at hour %.1f of %g, more than the %d a run may hold (about %.1f GB): the farm is far too small for the workload; "+
		"shorten --hours, lower the rate or add nodes", ErrSimTooLarge, waiting, at, horizon, maxSimWaiting, float64(maxSimWaiting)*simBytesPerWaiting/1e9)
}
