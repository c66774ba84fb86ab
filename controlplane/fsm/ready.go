package fsm

import (
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
)

// EachReadyTask calls fn, under the state's read lock, for every task that
// waits for placement: its kind, its model ("" for CPU work) and when it
// last became ready (scheduler.State.EachReady). Applies wait while it
// runs, so fn must be quick and must not call back into the FSM.
func (f *FSM) EachReadyTask(fn func(kind scheduler.Kind, model string, readyAt time.Time)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.s.sched.EachReady(fn)
}
