package scheduler

// account is the fair-share record of one paying account.
//
// Fair share: among accounts at the same priority whose work fits the
// asking node, the one with the fewest running tasks goes first; ties go to
// the account served longest ago (round robin), then to the smaller id.
// lastServed is a stamp from State.serveSeq, not a clock.
type account struct {
	id         string
	lastServed uint64
	running    int
	queues     []*acctQueue            // one per (priority, class) it has ready tasks in
	byKey      map[queueKey]*acctQueue // queues too, once there are many (see queue)
}

// queueKey names one of an account's queues.
type queueKey struct {
	prio int
	ci   int
}

func (s *State) accountFor(id string) *account {
	a, ok := s.accounts[id]
	if !ok {
		a = &account{id: id}
		s.accounts[id] = a
	}
	return a
}

// served records that a got a lease.
func (s *State) served(a *account) {
	s.serveSeq++
	a.lastServed = s.serveSeq
	a.running++
	a.rekey(true)
}

// finished records that one of a's leases ended.
func (a *account) finished() {
	a.running--
	a.rekey(false)
}
