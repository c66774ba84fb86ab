package scheduler

import (
	"hash/maphash"
	"math"
)

// A prepared video's tasks carry a hash of their normalized requirements,
// made with the records off the driving goroutine (PrepareSubmit,
// PrepareScenes), so that SubmitPrepared finds each task's class in a
// small direct-mapped memo with one comparison instead of comparing the
// requirements with every class (classFor). The memo is derived: a miss,
// a collision or unsorted tools only fall back to classFor.

// classMemoSize is the memo's number of slots (a power of two): a farm's
// classes are few.
const classMemoSize = 64

// reqSeed seeds reqHash; it differs between processes, which only moves
// classes between memo slots.
var reqSeed = maphash.MakeSeed()

// reqHash is the hash of requirements r as normalized (tools sorted,
// without duplicates); it tells apart what classKeyOf does.
func reqHash(r *Requirements) uint64 {
	var h maphash.Hash
	h.SetSeed(reqSeed)
	var b [8 * 4]byte
	put := func(i int, x uint64) {
		for k := range 8 {
			b[8*i+k] = byte(x >> (8 * k))
		}
	}
	put(0, uint64(r.GPUs))
	put(1, uint64(r.CPUSlots))
	put(2, math.Float64bits(r.GPUMemoryGB))
	put(3, uint64(len(r.Model)))
	h.Write(b[:])
	h.WriteString(r.Model)
	tools := r.Tools
	if !isSortedSet(tools) {
		tools = sortedSet(tools)
	}
	for _, t := range tools {
		put(0, uint64(len(t)))
		h.Write(b[:8])
		h.WriteString(t)
	}
	return h.Sum64()
}

// classHashed is classFor(*r) for requirements whose reqHash is h.
func (s *State) classHashed(r *Requirements, h uint64) *class {
	slot := &s.classMemo[h&(classMemoSize-1)]
	if c := *slot; c != nil && c.hash == h && c.req.same(r) {
		return c
	}
	c := s.classFor(*r)
	if c.req.same(r) { // r was normalized: h is c's hash
		c.hash = h
		*slot = c
	}
	return c
}
