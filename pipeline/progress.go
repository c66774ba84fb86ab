package pipeline

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProgressFunc receives a stage's progress as a whole percentage, 0 to 100.
// Calls are non-decreasing and 100 is reported only once the stage has
// succeeded. A nil ProgressFunc is allowed everywhere one is accepted.
type ProgressFunc func(percent int)

// reporter wraps a ProgressFunc so that it only ever sees increasing values
// within [lo, hi]; sub-steps of a stage report 0–100 into their own span.
type reporter struct {
	mu     sync.Mutex
	fn     ProgressFunc
	last   int
	lo, hi int
}

func newReporter(fn ProgressFunc) *reporter {
	return &reporter{fn: fn, last: -1, lo: 0, hi: 100}
}

// span returns a ProgressFunc that maps 0–100 onto [lo, hi] of r.
func (r *reporter) span(lo, hi int) ProgressFunc {
	return func(p int) {
		p = min(max(p, 0), 100)
		r.report(lo + (hi-lo)*p/100)
	}
}

func (r *reporter) report(p int) {
	if r == nil || r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p = min(max(p, 0), 100)
	if p <= r.last {
		return
	}
	r.last = p
	r.fn(p)
}

// ffmpegProgress parses the key=value lines of `ffmpeg -progress pipe:1`
// and reports the share of total encoded, capped at 99 (100 comes from the
// caller once the file is complete).
func ffmpegProgress(total time.Duration, fn ProgressFunc) func(line string) {
	return func(line string) {
		if fn == nil || total <= 0 {
			return
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || key != "out_time_us" {
			return
		}
		us, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || us < 0 {
			return
		}
		fn(min(int(time.Duration(us)*time.Microsecond*100/total), 99))
	}
}
