package fsm

// A video created on an idle farm is answered before a node takes it (the
// node takes it at its next poll for work), and its create said
// "all_matching_nodes_busy": nodes busy with work ahead of it, which was
// untrue, and a client acting on the code took the farm for saturated. The
// scheduler now says "next_in_line" for a task nothing waits ahead of
// (scheduler.ReasonNextInLine). The reason a create reports is kept in
// replicated state (its video.created event, CreatedEventInfo), so every
// member must switch at the same entry: NextInLine switches it, proposed
// once every member understands it (like ActiveWebhookLimit); before it,
// the busy reason is given as it always was.

// NextInLine makes the scheduler report scheduler.ReasonNextInLine for a
// task first in line, from this entry on.
type NextInLine struct {
	Now int64 `msgpack:"now"`
}

// Type implements Command.
func (NextInLine) Type() MessageType { return NextInLineType }

// applyNextInLine answers whether it switched the reason (false: it was
// switched).
func (s *state) applyNextInLine(*NextInLine) (bool, error) {
	was := s.nextInLine
	s.nextInLine = true
	s.sched.SetNextInLine(true)
	return !was, nil
}

const recNextInLine recordType = 32

// NextInLineOn reports whether a task first in line says next_in_line
// (NextInLine).
func (f *FSM) NextInLineOn() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.nextInLine
}
