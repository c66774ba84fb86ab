package fsm

// queueIndex answers "how many queued videos are ahead of this one" in O(log n). It is
// a Fenwick tree over queue sequence numbers, derived from the videos and rebuilt on
// restore, never snapshotted.
type queueIndex struct {
	tree    []int64 // 1-based Fenwick tree
	present []bool  // present[seq] is true while the video with that seq is queued
	size    int
}

func (q *queueIndex) grow(seq uint64) {
	if int(seq) < len(q.tree) {
		return
	}
	n := 2 * len(q.tree)
	if n < 1024 {
		n = 1024
	}
	for n <= int(seq) {
		n *= 2
	}
	present := make([]bool, n)
	copy(present, q.present)
	q.present = present
	q.tree = make([]int64, n)
	for i := 1; i < n; i++ {
		if present[i] {
			q.tree[i]++
		}
		if j := i + (i & -i); j < n {
			q.tree[j] += q.tree[i]
		}
	}
}

func (q *queueIndex) add(seq uint64, delta int64) {
	for i := int(seq); i < len(q.tree); i += i & -i {
		q.tree[i] += delta
	}
}

// push marks seq as queued.
func (q *queueIndex) push(seq uint64) {
	q.grow(seq)
	if q.present[seq] {
		return
	}
	q.present[seq] = true
	q.size++
	q.add(seq, 1)
}

// remove marks seq as no longer queued.
func (q *queueIndex) remove(seq uint64) {
	if seq == 0 || int(seq) >= len(q.present) || !q.present[seq] {
		return
	}
	q.present[seq] = false
	q.size--
	q.add(seq, -1)
}

// position is the 1-based place of seq in the queue, 0 when it is not queued.
func (q *queueIndex) position(seq uint64) uint64 {
	if seq == 0 || int(seq) >= len(q.present) || !q.present[seq] {
		return 0
	}
	var n int64
	for i := int(seq); i > 0; i -= i & -i {
		n += q.tree[i]
	}
	return uint64(n)
}
