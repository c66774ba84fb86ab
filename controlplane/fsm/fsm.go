package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
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
	// watch follows the videos event streams on this node watch (watch.go).
	watch videoWatch
	// replayThrough is the index a store opened with; Raft replays the log
	// from its last snapshot, and entries up to here are in the state already.
	replayThrough uint64
	// ckMu orders checkpoint writes and restores of the store file.
	ckMu sync.Mutex
	path string
	// Applies stage changed records for the next checkpoint (stage.go) from
	// stageAfter entries after the last snapshot, at snapAt; 0: never.
	stageAfter uint64
	snapAt     uint64
	// ahead holds the commands this node's proposers decoded (predecode.go).
	ahead aheadMap
}

// DefaultStageAfter is where an FSM opened by Open stages from: half of
// raftnode.DefaultSnapshotThreshold (this package cannot import raftnode,
// which imports it; the server sets it from the threshold it runs with).
const DefaultStageAfter = 4096

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns an empty FSM that keeps everything in memory: for tests and the
// simulator. A server uses Open.
func New() *FSM { return &FSM{s: newState()} }

// Open returns an FSM whose finished videos live in the state file at path
// (created if missing), loaded as of its last checkpoint; CheckpointIndex
// says which. See store.go.
func Open(path string) (*FSM, error) {
	st, err := openStore(path)
	if err != nil {
		return nil, err
	}
	s, index, err := st.load()
	if err != nil {
		st.close()
		return nil, err
	}
	if s == nil {
		s = newState()
	}
	s.attach(st)
	return &FSM{s: s, applied: index, replayThrough: index, path: path,
		stageAfter: DefaultStageAfter, snapAt: index}, nil
}

// CheckpointIndex is the Raft index the state file held when opened (0 for
// none, or without a file); Raft need not restore a snapshot at or below it.
func (f *FSM) CheckpointIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.replayThrough
}

// Reset empties an opened FSM and its file: for a node whose Raft state is
// gone (a wiped data directory joining again), whose old state must not mix
// with the log it will receive.
func (f *FSM) Reset() error {
	f.ckMu.Lock()
	defer f.ckMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.s.disk == nil {
		f.s, f.applied = newState(), 0
		return nil
	}
	if err := f.s.disk.close(); err != nil {
		return fmt.Errorf("close state store: %w", err)
	}
	if err := removeStore(f.path); err != nil {
		return fmt.Errorf("remove state store: %w", err)
	}
	st, err := openStore(f.path)
	if err != nil {
		return err
	}
	f.s = newState()
	f.s.attach(st)
	f.applied, f.replayThrough, f.snapAt = 0, 0, 0
	return nil
}

// Close closes the state file.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.s.disk == nil {
		return nil
	}
	return f.s.disk.close()
}

// Apply applies one committed log entry.
func (f *FSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.stage(1)
	return f.applyLocked(l)
}

// ApplyBatch applies a run of committed entries: what one commit of the leader
// covered, many concurrent creates per fsync under load.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	// The lock is taken for one entry at a time, not for the batch: a batch
	// of creates holds it for a millisecond or more on a loaded node, and
	// every read waited for all of it, the key lookup that starts each
	// request first (5% of a create's time on 16 cores). Readers see the
	// state between two entries, as they would between two batches.
	for i, l := range logs {
		f.mu.Lock()
		out[i] = f.applyLocked(l)
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.stage(len(logs))
	f.mu.Unlock()
	return out
}

// SetStageAfter sets how many entries after a snapshot the applies start
// copying changed records ahead of the next one (stage.go): about half of
// Raft's snapshot threshold. 0 turns staging off.
func (f *FSM) SetStageAfter(n uint64) {
	f.mu.Lock()
	f.stageAfter = n
	f.mu.Unlock()
}

// stage copies changed records ahead of the next checkpoint, for n entries
// just applied, once the snapshot interval is far enough along. The caller
// holds the lock.
func (f *FSM) stage(n int) {
	if f.stageAfter > 0 && f.applied >= f.snapAt+f.stageAfter {
		f.s.stage(n * stageBudget)
	}
}

func (f *FSM) applyLocked(l *raft.Log) any {
	if l.Index <= f.replayThrough {
		// Raft replays from its last snapshot; the state file is further on.
		return nil
	}
	f.applied = l.Index
	if l.Type != raft.LogCommand {
		return nil
	}
	cmd, err := f.decode(l.Data)
	if err != nil {
		// A log entry this binary cannot read means replicas would diverge.
		panic(fmt.Sprintf("fsm: log index %d: %v", l.Index, err))
	}
	f.s.out.begin(l.Index)
	start := time.Now()
	v, err := f.s.apply(cmd)
	f.obs.applied(cmd.Type(), start)
	f.afterApply()
	f.watch.afterEntry(l.Index, cmd, f.s)
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
	defer f.watch.afterEntry(f.applied, c, f.s)
	return f.s.apply(c)
}

// AppliedIndex is the index of the last log entry applied.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// Snapshot copies the hot state under the read lock; Persist writes the
// checkpoint (with a store) and streams the snapshot while applies go on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	start := time.Now()
	sn := &snapshot{f: f, s: f.s, obs: f.obs}
	if f.s.disk != nil {
		cp, err := f.s.takeCheckpoint(f.applied)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		sn.cp = cp
		f.snapAt = f.applied
	}
	sn.records = f.s.records(f.s.disk != nil)
	f.obs.snapshot("copy", start, 0)
	return sn, nil
}

type snapshot struct {
	f       *FSM
	s       *state
	cp      *checkpoint
	records []record
	obs     Observer
}

// Persist writes the checkpoint and its marker (with a state file; see
// checkpoint.go), or streams the snapshot to the sink (without).
func (sn *snapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	if sn.cp != nil {
		n, err := sn.f.checkpoint(sn)
		if err != nil {
			_ = sink.Cancel()
			return err
		}
		if _, err := sink.Write(checkpointMarker(sn.cp.index)); err != nil {
			_ = sink.Cancel()
			return fmt.Errorf("write checkpoint marker: %w", err)
		}
		if err := sink.Close(); err != nil {
			return err
		}
		sn.obs.snapshot("persist", start, n)
		return nil
	}
	w := &countingWriter{w: sink}
	if err := writeSnapshot(w, sn.records, nil); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	sn.obs.snapshot("persist", start, w.n)
	return nil
}

// Release is a no-op: the snapshot owns copies.
func (sn *snapshot) Release() {}

// checkpoint writes sn's checkpoint in one transaction and drops what it
// wrote from memory. It returns the bytes it wrote: the hot stream and the
// newly finished videos.
func (f *FSM) checkpoint(sn *snapshot) (int64, error) {
	f.ckMu.Lock()
	defer f.ckMu.Unlock()
	// Checkpoints are the file's only writer while the node runs (ckMu).
	pages := sn.s.disk.pagesWritten()
	size, err := writeCheckpoint(sn.s.disk, sn.cp, sn.records)
	if err == nil {
		sn.obs.written(sn.s.disk.pagesWritten() - pages)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		return 0, err // what it would have written stays dirty
	}
	if f.s == sn.s { // not replaced by a restore meanwhile
		f.s.dropWritten(sn.cp)
	}
	return size, nil
}

// writeCheckpoint commits cp in one transaction: the newly finished videos,
// the changed records kept one per key, the hot stream of the rest, and the
// index. It returns the bytes it wrote.
func writeCheckpoint(st *store, cp *checkpoint, records []record) (int64, error) {
	var hot bytes.Buffer
	if err := writeSnapshot(&hot, records, nil); err != nil {
		return 0, fmt.Errorf("checkpoint: hot state: %w", err)
	}
	size := int64(hot.Len())
	err := st.db.Update(func(tx *bbolt.Tx) error {
		// Two snapshots taken before either is persisted write in turn; the
		// older must not overwrite what the newer wrote.
		if b := tx.Bucket([]byte(bucketMeta)).Get([]byte(metaIndex)); len(b) == 8 && binary.BigEndian.Uint64(b) > cp.index {
			return fmt.Errorf("%w: it holds %d", ErrCheckpointGone, binary.BigEndian.Uint64(b))
		}
		n, err := putVideos(tx, cp.videos, cp.counts)
		size += n
		if err != nil {
			return err
		}
		n, err = putHotRecords(tx, cp.hot)
		size += n
		if err != nil {
			return err
		}
		return putHot(tx, cp.index, hot.Bytes(), cp.extra)
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint at index %d: %w", cp.index, err)
	}
	return size, nil
}

// Restore replaces the state with the one in the snapshot stream. With a
// store, the finished videos are written to a new file as they arrive, which
// then replaces the old one.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.mu.RLock()
	old := f.s.disk
	f.mu.RUnlock()
	if old == nil {
		s, err := readSnapshot(rc, readOpts{})
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
	f.ckMu.Lock()
	defer f.ckMu.Unlock()
	s, err := f.restoreToStore(rc)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := old.close(); err != nil {
		s.disk.close()
		return fmt.Errorf("restore snapshot: close state store: %w", err)
	}
	tmp := s.disk.path
	if err := s.disk.close(); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("restore snapshot: replace state store: %w", err)
	}
	st, err := openStore(f.path)
	if err != nil {
		// The old file is gone and the new one will not open: this node
		// cannot serve, and must not pretend to.
		panic(fmt.Sprintf("fsm: reopen state store after restore: %v", err))
	}
	s.attach(st)
	f.s = s
	// The state is the snapshot's, at its index: the file says the same.
	if s.out.index > 0 {
		f.applied = s.out.index
	}
	f.replayThrough = 0
	return nil
}

// restoreToStore reads a snapshot into a new state whose finished videos are
// in a new file beside the current one, checkpointed at the snapshot's index.
func (f *FSM) restoreToStore(r io.Reader) (*state, error) {
	tmp := f.path + ".restore"
	if err := removeStore(tmp); err != nil {
		return nil, err
	}
	st, err := openStore(tmp)
	if err != nil {
		return nil, err
	}
	// One sync at the end instead of one per batch: until the rename the file
	// is nobody's state.
	st.db.NoSync = true
	fail := func(err error) (*state, error) {
		st.close()
		_ = removeStore(tmp)
		return nil, err
	}
	sink := &restoreSink{st: st}
	s, err := readSnapshot(r, readOpts{sink: sink, track: true})
	if err != nil {
		return fail(err)
	}
	if err := sink.flush(); err != nil {
		return fail(err)
	}
	if sink.counts != nil {
		s.diskCounts, s.diskLeftovers = sink.counts, sink.leftovers
	}
	s.attach(st)
	// Everything the stream held in memory is dirty: the first checkpoint
	// writes it, and no finished video is in memory to move.
	cp, err := s.takeCheckpoint(s.out.index)
	if err != nil {
		return fail(err)
	}
	if _, err := writeCheckpoint(st, cp, s.records(true)); err != nil {
		return fail(fmt.Errorf("checkpoint restored state: %w", err))
	}
	s.dropWritten(cp)
	st.db.NoSync = false
	if err := st.db.Sync(); err != nil {
		return fail(fmt.Errorf("sync restored state: %w", err))
	}
	return s, nil
}
