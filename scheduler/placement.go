package scheduler

import (
	"fmt"
	"slices"
	"time"
)

// candidate is the task one bucket offers the asking node: the oldest task
// of the bucket's top account, with that account's key.
type candidate struct {
	key topKey
	t   *task
}

// before reports whether c is served before d: account fair-share order,
// then age. Unique, so the pick never depends on iteration order.
func (c candidate) before(d candidate) bool {
	if c.key.acct != d.key.acct {
		return c.key.ahead(d.key)
	}
	return c.t.older(d.t)
}

// Place picks the task node nodeID should run next and leases it to the
// node until now+dur. It is the whole placement policy:
//
//  1. hard constraints: only classes the node's hardware and software can
//     run (model, tools, GPU count and memory, CPU slots) that fit its free
//     capacity now;
//  2. priority: the highest priority level with such a task;
//  3. fair share: among those buckets, the account with the fewest running
//     tasks, then the one served longest ago (round robin), then by id;
//  4. age: that account's oldest task (older video, then graph order);
//  5. warm model: a task whose model is warm on the node may go first if
//     its account is level with the fair-share pick on running tasks and
//     the passed-over task has been ready for less than Config.WarmWindow.
//
// A task that failed on this node is skipped while some other live node
// that could run it has not failed it. Asking counts as a heartbeat. When
// nothing fits, the error wraps ErrNoWork.
func (s *State) Place(nodeID string, now time.Time, dur time.Duration) (Lease, error) {
	t, err := s.place(nodeID, now, dur)
	if err != nil {
		return Lease{}, err
	}
	return t.leaseInfo(), nil
}

// place is Place up to the lease it grants, which it returns as its task.
func (s *State) place(nodeID string, now time.Time, dur time.Duration) (*task, error) {
	d, err := leaseMS(dur)
	if err != nil {
		return nil, err
	}
	n, err := s.node(nodeID)
	if err != nil {
		return nil, err
	}
	return s.placeOn(n, ms(now), d)
}

// placeOn is place once the lease's length is checked and the node found.
func (s *State) placeOn(n *node, at, d int64) (*task, error) {
	nodeID := n.spec.ID
	s.touch(n, at)
	s.release(at)
	if n.spec.Draining {
		return nil, fmt.Errorf("%w: node %s is draining", ErrNoWork, nodeID)
	}
	if n.cordoned {
		return nil, fmt.Errorf("%w: node %s is cordoned", ErrNoWork, nodeID)
	}
	free := n.view()
	if !free.empty() {
		for _, l := range s.levels {
			if c, ok := s.pick(n, free, l, at); ok {
				s.grant(c.t, n, at, d)
				return c.t, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no ready task fits node %s (%d free CPU slots, %d idle GPUs)",
		ErrNoWork, nodeID, n.freeCPU(), n.idleGPUs())
}

// pick chooses among the buckets of level l that n can serve now. It
// visits the node's classes, rules out from the copied top keys (without
// touching the buckets) those whose account cannot beat the best so far
// nor be a warm pick level with it, and checks capacity in O(1).
func (s *State) pick(n *node, free *freeView, l *level, now int64) (candidate, bool) {
	var best, warm candidate
	var bk topKey // best's account key
	for i := range n.capList {
		ce := &n.capList[i]
		if int(ce.ci) >= len(l.tops) {
			continue
		}
		top := &l.tops[ce.ci]
		tk := top.key
		if tk.acct == nil {
			continue
		}
		if best.t != nil && tk.acct != bk.acct && bk.ahead(tk) && (!ce.warm || tk.running != bk.running) {
			continue // its best account is behind: it can neither win nor be the warm pick
		}
		if !free.fits(ce) {
			continue
		}
		c := candidate{key: tk, t: top.head}
		if c.t.past().failures > 0 {
			var ok bool
			if c, ok = offer(n, l.buckets[ce.ci], s.classes[ce.ci]); !ok {
				continue
			}
		}
		if best.t == nil || c.before(best) {
			best = c
			bk = c.key
		}
		if ce.warm && (warm.t == nil || c.before(warm)) {
			warm = c
		}
	}
	if best.t == nil {
		return best, false
	}
	if warm.t != nil && warm.t != best.t &&
		warm.key.running == best.key.running &&
		now-best.t.readyAt < s.cfg.WarmWindow.Milliseconds() {
		return warm, true
	}
	return best, true
}

// failedLookahead bounds how many accounts deep a bucket is searched when
// the tasks at its top already failed on the asking node.
const failedLookahead = 8

// avoid reports whether n should leave t to another node: t failed on n
// and some live node that could run it has not failed it (there are more
// capable live nodes than nodes t failed on).
func avoid(t *task, n *node, cls *class) bool {
	return t.past().failures > 0 && cls.capable > len(t.past().failedNodes) && slices.Contains(t.past().failedNodes, n.spec.ID)
}

// offer returns the task bucket b offers n: the oldest task of the top
// account in fair-share order, skipping accounts whose oldest task n
// should avoid (at most failedLookahead accounts deep, visited in order by
// a best-first walk of the heap).
func offer(n *node, b *bucket, cls *class) (candidate, bool) {
	if t := b.heap[0].head; !avoid(t, n, cls) {
		return candidate{key: b.heap[0].key, t: t}, true
	}
	var frontier []int
	push := func(i int) {
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(b.heap) {
				frontier = append(frontier, c)
			}
		}
	}
	push(0)
	for seen := 1; seen < failedLookahead && len(frontier) > 0; seen++ {
		m := 0
		for i := 1; i < len(frontier); i++ {
			if b.less(frontier[i], frontier[m]) {
				m = i
			}
		}
		i := frontier[m]
		frontier[m] = frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		if t := b.heap[i].head; !avoid(t, n, cls) {
			return candidate{key: b.heap[i].key, t: t}, true
		}
		push(i)
	}
	return candidate{}, false
}
