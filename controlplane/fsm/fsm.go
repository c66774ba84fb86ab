package fsm

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Result is what Apply returns for every log entry: the command's value, or a
// domain refusal as an error value.
type Result struct {
	Value any
	Err   error
}

// FSM is the replicated state machine. It implements raft.FSM and raft.BatchingFSM.
type FSM struct {
	mu      sync.RWMutex
	s       *state
	applied uint64
	// outbox is called after an apply that wrote webhook deliveries; see OnOutbox.
	outbox func()
	// obs receives apply and snapshot timings; see SetObserver.
	obs Observer
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns an empty FSM.
func New() *FSM { return &FSM{s: newState()} }

// Apply applies one committed log entry.
func (f *FSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applyLocked(l)
}

// ApplyBatch applies a run of committed entries under one lock, which is what lets
// the leader commit many concurrent creates per fsync.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range logs {
		out[i] = f.applyLocked(l)
	}
	return out
}

func (f *FSM) applyLocked(l *raft.Log) any {
	f.applied = l.Index
	if l.Type != raft.LogCommand {
		return nil
	}
	cmd, err := Decode(l.Data)
	if err != nil {
		// A log entry this binary cannot read means replicas would diverge.
		panic(fmt.Sprintf("fsm: log index %d: %v", l.Index, err))
	}
	f.s.out.begin(l.Index)
	start := time.Now()
	v, err := f.s.apply(cmd)
	f.obs.applied(cmd.Type(), start)
	f.afterApply()
	return &Result{Value: v, Err: err}
}

// OnOutbox sets fn to be called after every apply that wrote webhook deliveries,
// so the deliverer wakes at once instead of polling. fn runs under the FSM's
// lock: it must not block nor read the FSM (a non-blocking channel send). It
// changes no state, so Apply stays deterministic. Call it before the node starts.
func (f *FSM) OnOutbox(fn func()) {
	f.mu.Lock()
	f.outbox = fn
	f.mu.Unlock()
}

func (f *FSM) afterApply() {
	if f.s.outboxWritten {
		f.s.outboxWritten = false
		if f.outbox != nil {
			f.outbox()
		}
	}
}

// ApplyCommand applies a command directly, outside Raft. It exists for the
// simulator and for tests of the state rules; production goes through Raft.
func (f *FSM) ApplyCommand(c Command) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.afterApply()
	// Outside Raft there is no log index: commands are counted instead, so the
	// ledger's keys run on as they would in the log.
	f.applied++
	f.s.out.begin(f.applied)
	return f.s.apply(c)
}

// AppliedIndex is the index of the last log entry applied.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// Snapshot copies the state under the read lock; Persist streams the copy while
// applies go on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	start := time.Now()
	records := f.s.records()
	f.obs.snapshot("copy", start, 0)
	return &snapshot{records: records, obs: f.obs}, nil
}

// Restore replaces the state with the one in the snapshot stream.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	f.s = s
	// The last index the snapshot's state had applied; Raft goes on from there.
	f.applied = max(f.applied, s.out.index)
	f.mu.Unlock()
	return nil
}
