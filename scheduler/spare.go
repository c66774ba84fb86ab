package scheduler

// The ready queue's records empty and refill all the time: a level when
// the farm catches up with its queue, an account's queue of a class
// whenever its last ready task of that class is leased. Emptied ones are
// kept for reuse, bounded, instead of being allocated again for most
// placements of a busy farm. Reuse changes no order: a reused record is
// empty, exactly like a new one.

const (
	maxSpareLevels = 8
	maxSpareQueues = 1024
	// maxScanQueues is how many queues an account may have before it
	// also keeps them in a map: fewer are found faster by a scan.
	maxScanQueues = 8
)

// newLevel returns an empty level of priority p. A reused level keeps
// its (empty) buckets.
func (s *State) newLevel(p int) *level {
	n := len(s.spareLevels)
	if n == 0 {
		return &level{prio: p}
	}
	l := s.spareLevels[n-1]
	s.spareLevels[n-1] = nil
	s.spareLevels = s.spareLevels[:n-1]
	l.prio = p
	return l
}

func (s *State) spareLevel(l *level) {
	if len(s.spareLevels) < maxSpareLevels {
		s.spareLevels = append(s.spareLevels, l)
	}
}

// newQueue returns an empty account queue, keeping a reused one's task
// array.
func (s *State) newQueue(a *account, l *level, c *class, b *bucket) *acctQueue {
	n := len(s.spareQueues)
	if n == 0 {
		return &acctQueue{acct: a, lvl: l, cls: c, b: b}
	}
	aq := s.spareQueues[n-1]
	s.spareQueues[n-1] = nil
	s.spareQueues = s.spareQueues[:n-1]
	*aq = acctQueue{acct: a, lvl: l, cls: c, b: b, tasks: aq.tasks}
	return aq
}

func (s *State) spareQueue(aq *acctQueue) {
	if len(s.spareQueues) < maxSpareQueues {
		*aq = acctQueue{tasks: taskSet{small: aq.tasks.small[:0]}} // drop references, keep the room
		s.spareQueues = append(s.spareQueues, aq)
	}
}

// queue returns a's queue of priority prio and class ci, or nil.
func (a *account) queue(prio, ci int) *acctQueue {
	if a.byKey != nil {
		return a.byKey[queueKey{prio: prio, ci: ci}]
	}
	for _, aq := range a.queues {
		if aq.cls.idx == ci && aq.lvl.prio == prio {
			return aq
		}
	}
	return nil
}

func (aq *acctQueue) key() queueKey { return queueKey{prio: aq.lvl.prio, ci: aq.cls.idx} }

// addQueue lists aq among a's queues.
func (a *account) addQueue(aq *acctQueue) {
	aq.aIdx = len(a.queues)
	a.queues = append(a.queues, aq)
	switch {
	case a.byKey != nil:
		a.byKey[aq.key()] = aq
	case len(a.queues) > maxScanQueues:
		a.byKey = make(map[queueKey]*acctQueue, len(a.queues))
		for _, q := range a.queues {
			a.byKey[q.key()] = q
		}
	}
}

// removeQueue takes aq out of a's queues.
func (a *account) removeQueue(aq *acctQueue) {
	last := len(a.queues) - 1
	a.queues[aq.aIdx] = a.queues[last]
	a.queues[aq.aIdx].aIdx = aq.aIdx
	a.queues[last] = nil
	a.queues = a.queues[:last]
	if a.byKey != nil {
		delete(a.byKey, aq.key())
		if last == 0 {
			a.byKey = nil
		}
	}
}
