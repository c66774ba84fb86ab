package bench

import (
	"math/bits"
	"slices"
	"time"
)

// eventQueue is the simulator's pending events, popped in (at, seq) order:
// a radix heap. A discrete-event simulation never schedules an event
// before the one it is handling, and a radix heap uses that: an event
// waits in the bucket of the highest bit in which its time differs from
// the last popped time, and only the lowest non-empty bucket is ever
// sorted out, so a push is an append and a pop costs a few moves on
// average, where a binary heap of a busy farm's few thousand events sifts
// through a dozen levels each time. Events are values: no allocation per
// event once the buckets have grown.
//
// Pushing an event before the last popped time is a bug in the caller; it
// panics.
type eventQueue struct {
	last time.Duration // time of the last popped event (all pending are at or after it)
	// b[0] holds the events at last, in seq order from head on; b[i] for
	// i >= 1 those whose time first differs from last in bit i-1 (times
	// are not negative: bit 63 never differs).
	b    [64][]event
	head int
	n    int
	// full has bit i set when b[i] (i >= 1) may hold events: refill finds
	// the lowest without a walk over the empty buckets.
	full uint64
}

func (q *eventQueue) len() int { return q.n }

func (q *eventQueue) push(e event) {
	if e.at < q.last {
		panic("bench: event scheduled in the past")
	}
	i := bits.Len64(uint64(e.at ^ q.last))
	q.b[i] = append(q.b[i], e)
	q.full |= 1 << i
	q.n++
}

// pop removes and returns the next event; the queue must not be empty.
func (q *eventQueue) pop() event {
	if q.head == len(q.b[0]) {
		q.refill()
	}
	e := q.b[0][q.head]
	q.b[0][q.head] = event{} // drop the task pointer
	q.head++
	q.n--
	return e
}

// refill moves the events of the lowest non-empty bucket down around
// their earliest time, which becomes last; those at it land in b[0].
func (q *eventQueue) refill() {
	q.b[0], q.head = q.b[0][:0], 0
	i := bits.TrailingZeros64(q.full &^ 1)
	src := q.b[i]
	m := src[0].at
	for _, e := range src[1:] {
		m = min(m, e.at)
	}
	q.last = m
	full := q.full &^ (1 << i)
	for _, e := range src {
		j := bits.Len64(uint64(e.at ^ m)) // < i: e.at and m agree above bit i-1
		q.b[j] = append(q.b[j], e)
		full |= 1 << j
	}
	q.full = full
	clear(src)
	q.b[i] = src[:0]
	// Pushes that came through higher buckets arrive out of seq order.
	if len(q.b[0]) > 1 {
		slices.SortFunc(q.b[0], func(a, b event) int {
			if a.seq < b.seq {
				return -1
			}
			return 1
		})
	}
}
