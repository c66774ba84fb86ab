package scheduler

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// class is a requirement class: every task with the same normalized
// requirements. Classes are few (models x resolutions + the CPU stages), so
// a node's placement looks at classes, never at individual tasks.
type class struct {
	idx int
	key string // Requirements.key, for people and tests
	req Requirements
	// hash is reqHash(&req) once the class is in State.classMemo.
	hash uint64
	// capable counts live (not down, not draining) nodes whose hardware
	// could run this class when idle.
	capable int
	// done are the completion times (unix ms) of the class's latest tasks,
	// oldest first, at most recentCompletions: its recent throughput, for
	// EstimateWait. Not in snapshots: a restored state estimates from the
	// completions it has seen since.
	done recent
	// took are the service times (ms, lease granted to completed) of the
	// same tasks as done, in the same order: what Overdue compares a
	// running task with. Not in snapshots either.
	took recent
}

// noteDone records a task of the class completed at ms after running for
// took ms under its lease.
func (c *class) noteDone(ms, took int64) {
	c.done.add(ms)
	c.took.add(max(took, 0))
}

// recent holds the latest recentCompletions values added, oldest first, in
// an array twice as long: the window moves back to the array's start only
// when it reaches the end, one copy per recentCompletions adds, where
// shifting a full window on every add copied it each time (every
// completion adds).
type recent struct {
	buf    [2 * recentCompletions]int64
	lo, hi int // the window is buf[lo:hi]
}

func (r *recent) add(x int64) {
	if r.hi == len(r.buf) {
		r.hi = copy(r.buf[:], r.buf[r.lo:r.hi])
		r.lo = 0
	}
	r.buf[r.hi] = x
	r.hi++
	if r.hi-r.lo > recentCompletions {
		r.lo++
	}
}

// values are the window, oldest first; valid until the next add.
func (r *recent) values() []int64 { return r.buf[r.lo:r.hi] }

// classKey identifies a class in State.classByKey. Every task looks its
// class up, so the key is built without allocating for the usual zero or
// one tool; it tells classes apart exactly as Requirements.key does (the
// memory by its bits: 0 and -0 format differently there too).
type classKey struct {
	gpus, cpu int
	mem       uint64
	model     string
	ntools    int
	tools     string // the only tool, or the quoted tools joined by "|"
}

// classKeyOf returns the key of normalized requirements r.
func classKeyOf(r *Requirements) classKey {
	k := classKey{gpus: r.GPUs, cpu: r.CPUSlots, mem: math.Float64bits(r.GPUMemoryGB), model: r.Model, ntools: len(r.Tools)}
	switch len(r.Tools) {
	case 0:
	case 1:
		k.tools = r.Tools[0]
	default:
		var b strings.Builder
		for i, t := range r.Tools {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(strconv.Quote(t))
		}
		k.tools = b.String()
	}
	return k
}

// countCapable adds delta to the capable count of every class n can run,
// if n is live.
func (s *State) countCapable(n *node, delta int) {
	if !n.live() {
		return
	}
	for _, ce := range n.capList {
		s.classes[ce.ci].capable += delta
	}
}

// classFor returns the class of requirements r (normalized or not),
// creating it and indexing every node against it if it is new. Tasks share
// the class's normalized copy of r, which nothing mutates.
func (s *State) classFor(r Requirements) *class {
	if !isSortedSet(r.Tools) {
		r = r.normalized()
	}
	if len(s.classes) <= maxScanClasses {
		for _, c := range s.classes {
			if c.req.same(&r) {
				return c
			}
		}
	}
	k := classKeyOf(&r)
	if c, ok := s.classByKey[k]; ok {
		return c
	}
	r = r.normalized() // a copy: the caller's slice is never aliased
	c := &class{idx: len(s.classes), key: r.key(), req: r}
	s.classes = append(s.classes, c)
	s.classByKey[k] = c
	for _, n := range s.nodes { // order-independent: each node is updated on its own
		if n.staticFit(&c.req) {
			n.capList = append(n.capList, n.capEntry(c))
			if n.live() {
				c.capable++
			}
		}
	}
	return c
}

// maxScanClasses is how many classes classFor compares a task's
// requirements with one by one before it builds a key for the map: a
// farm's few classes are found faster that way.
const maxScanClasses = 16

// same reports whether normalized r and o are the same requirements, as
// classKeyOf tells them apart.
func (r *Requirements) same(o *Requirements) bool {
	return r.GPUs == o.GPUs && r.CPUSlots == o.CPUSlots &&
		math.Float64bits(r.GPUMemoryGB) == math.Float64bits(o.GPUMemoryGB) &&
		r.Model == o.Model && slices.Equal(r.Tools, o.Tools)
}

// isSortedSet reports whether xs is sorted without duplicates, as
// sortedSet would return it (apart from nil for empty).
func isSortedSet(xs []string) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i-1] >= xs[i] {
			return false
		}
	}
	return true
}
