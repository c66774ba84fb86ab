package scheduler

import "time"

// EachReady calls fn for every task waiting for placement (TaskReady): its
// kind, its model ("" for CPU work) and when it last became ready. The order
// is unspecified. It walks the ready queue's own index (level, bucket,
// account queue), so it visits only waiting tasks and allocates nothing;
// the control plane's metrics use it to export how long work has waited.
// fn must not change the state.
func (s *State) EachReady(fn func(kind Kind, model string, readyAt time.Time)) {
	for _, l := range s.levels {
		for _, b := range l.buckets {
			if b == nil {
				continue
			}
			for _, e := range b.heap {
				e.aq.tasks.each(func(t *task) { fn(t.kind, t.cls.req.Model, fromMS(t.readyAt)) })
			}
		}
	}
}

// each calls fn for every task of the set, oldest first.
func (s *taskSet) each(fn func(*task)) {
	if s.big != nil {
		s.big.Scan(func(t *task) bool { fn(t); return true })
		return
	}
	for _, t := range s.small {
		fn(t)
	}
}
