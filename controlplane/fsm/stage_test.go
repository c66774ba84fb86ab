package fsm_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// raftApplier opens an FSM with a state file and returns it, a function
// that applies a command as the next Raft log entry (failing the test on an
// error), and the index of the last entry applied.
func raftApplier(t *testing.T) (*fsm.FSM, func(fsm.Command), *uint64) {
	f, err := fsm.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	index := new(uint64)
	return f, func(c fsm.Command) {
		t.Helper()
		data, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		*index++
		res, ok := f.Apply(&raft.Log{Index: *index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result)
		if !ok || res.Err != nil {
			t.Fatalf("apply %s at %d: %+v", c.Type(), *index, res)
		}
	}, index
}

// Past the staging point the applies copy each changed video and task
// graph ahead of the snapshot, so that the snapshot (which stops every
// write) finds nothing left to copy; while a checkpoint is in flight they
// copy nothing, and a checkpoint's write drops what it took.
func TestStagingCopiesAhead(t *testing.T) {
	f, apply, index := raftApplier(t)
	f.SetStageAfter(20)
	creates := func(n int) {
		for range n {
			apply(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_%d", *index), AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(*index)})
		}
	}
	stats := func(when string, changed, staged func(int) bool) {
		t.Helper()
		ts := f.TierStats()
		if !changed(ts.Changed) || !staged(ts.Staged) {
			t.Fatalf("%s: %d records changed, %d staged", when, ts.Changed, ts.Staged)
		}
	}
	zero := func(n int) bool { return n == 0 }
	some := func(n int) bool { return n > 0 }
	atLeast := func(m int) func(int) bool { return func(n int) bool { return n >= m } }

	apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	creates(18) // index 19: not yet
	stats("before the staging point", atLeast(36), zero)
	creates(60) // 2 records a create, 4 staged an entry: the backlog is gone
	stats("past the staging point", zero, atLeast(2*78))

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	stats("snapshot taken", zero, atLeast(2*78))
	creates(30) // a checkpoint is in flight: nothing is staged
	stats("checkpoint in flight", atLeast(60), atLeast(2*78))
	if err := snap.Persist(discardSink{}); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	stats("checkpoint written", atLeast(60), zero)
	creates(40) // 70 entries after the snapshot: staging again
	stats("past the next staging point", zero, atLeast(60))

	checkpoint(t, f)
	stats("another checkpoint written", zero, zero)
	creates(19) // the staging point is 20 entries after the snapshot
	stats("before the staging point", atLeast(38), zero)
	creates(20)
	stats("past the staging point again", zero, some)
}

// Two snapshots of one index, written in the opposite order: the second
// write finds the finished video the first let go of, and must leave it
// on disk (it listed it as held in memory, and a backup then panicked).
func TestCheckpointsOfOneIndexOutOfOrder(t *testing.T) {
	f, apply, _ := raftApplier(t)
	apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	apply(&fsm.CreateVideo{VideoID: "vid_1", AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0})
	apply(&fsm.FailVideo{VideoID: "vid_1", Reason: "operator", Now: t0})
	older, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, f) // the newer, of the same index
	if err := older.Persist(discardSink{}); err != nil {
		t.Fatal(err)
	}
	if ts := f.TierStats(); ts.VideosOnDisk != 1 || ts.VideosInMemory != 0 {
		t.Fatalf("after both checkpoints: %d videos on disk, %d in memory", ts.VideosOnDisk, ts.VideosInMemory)
	}
	var backup bytes.Buffer
	if err := f.WriteBackup(&backup); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Video("a", "vid_1"); !ok || v.Status != fsm.StatusFailed {
		t.Fatalf("vid_1: %+v, found %v", v, ok)
	}
}
