package scheduler

import (
	"math"
	"time"
)

// WaitEstimate is how long a queued video may wait before it starts to
// render, as a median and a 90th percentile.
type WaitEstimate struct {
	P50, P90 time.Duration
}

const (
	// recentCompletions is how many completions per class the estimate
	// remembers, and recentWindow how far back it looks (ms).
	recentCompletions = 64
	recentWindow      = 30 * 60 * 1000
)

// EstimateWait estimates how long the queued video videoID waits before its
// first task starts, from the queue ahead of it (its QueuePosition) and the
// recent throughput of its class: the tasks of the same requirements that
// completed in the last 30 minutes (up to 64), which only the nodes that
// can run it complete. Treating completions as a Poisson process of that
// rate, the wait for the P-th is Gamma(P, rate) distributed; its median and
// 90th percentile come from the Wilson–Hilferty approximation. False when
// it cannot say: the video is not queued, no live node can run its task,
// or fewer than two tasks of its class completed in the window.
func (s *State) EstimateWait(videoID string, now time.Time) (WaitEstimate, bool) {
	v, err := s.video(videoID)
	if err != nil || v.state != VideoQueued {
		return WaitEstimate{}, false
	}
	var waiting *task
	for _, t := range v.tasks {
		if t.state == TaskReady && (waiting == nil || t.older(waiting)) {
			waiting = t
		}
	}
	if waiting == nil || waiting.cls.capable == 0 {
		return WaitEstimate{}, false
	}
	at := ms(now)
	recent := waiting.cls.done.values()
	first := len(recent)
	for i, d := range recent {
		if d >= at-recentWindow {
			first = i
			break
		}
	}
	k := len(recent) - first
	if k < 2 {
		return WaitEstimate{}, false
	}
	span := max(at-recent[first], 1000)
	rate := float64(k) / float64(span) // completions per ms
	p := float64(s.position(waiting))
	quantile := func(z float64) time.Duration {
		c := 1 / (9 * p)
		x := p * math.Pow(max(1-c+z*math.Sqrt(c), 0), 3)
		return time.Duration(x / rate * float64(time.Millisecond))
	}
	return WaitEstimate{P50: quantile(0), P90: quantile(1.2815516)}, true
}
