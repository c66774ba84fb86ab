package raftnode_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/raft-wal/migrate"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// TestOldLogMovesToWAL opens a data directory laid out as before raft-wal,
// the log in raft.db, with the leftovers of a copy cut short beside it: the
// node starts with the same log, entry for entry, and the same state,
// raft.db's log is emptied and the leftovers are gone. Then a crash between
// the copy's rename and the emptying: raft.db holds the log again beside the
// WAL, and the next start empties it without copying.
func TestOldLogMovesToWAL(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir)
	apply(t, n, account("a", 100))
	apply(t, n, video("v1", "a", 7, "idem-1"))
	apply(t, n, video("v2", "a", 3, ""))
	apply(t, n, &fsm.FailVideo{VideoID: "v2", Reason: "x", Now: t0})
	accounts, videos, keys := []string{"a"}, []string{"v1", "v2"}, []string{"a-key"}
	before := read(t, n, accounts, videos, keys)
	closeNode(t, n)

	old := walEntries(t, dir)
	if len(old) < 5 {
		t.Fatalf("the log holds %d entries", len(old))
	}
	toBolt(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, "wal")); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "wal.tmp")
	if err := os.MkdirAll(cut, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cut, "00000000000000000001-0000000000000001.wal"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}

	reopen := func(newAccount string) {
		t.Helper()
		n := open(t, dir)
		barrier(t, n)
		if after := read(t, n, accounts, videos, keys); !equalState(before, after) {
			t.Fatalf("state after the move\n%+v\nwant\n%+v", after, before)
		}
		apply(t, n, account(newAccount, 1)) // and it goes on
		before = read(t, n, accounts, videos, keys)
		closeNode(t, n)
		if got := walEntries(t, dir); !reflect.DeepEqual(got[:len(old)], old) {
			t.Fatalf("the WAL's log differs from raft.db's: %d entries against %d", len(got), len(old))
		}
		if first, last := boltRange(t, dir); first != 0 || last != 0 {
			t.Fatalf("raft.db still holds the log [%d, %d]", first, last)
		}
		if _, err := os.Stat(cut); !os.IsNotExist(err) {
			t.Fatalf("the cut copy is still there: %v", err)
		}
	}
	reopen("b")

	old = walEntries(t, dir)
	toBolt(t, dir) // as if the last start crashed after the rename
	reopen("c")
}

// walEntries reads every entry of the closed node's WAL.
func walEntries(t *testing.T, dir string) []raft.Log {
	t.Helper()
	w := openTestWAL(t, dir)
	defer w.Close()
	first, last, err := raftnode.LogRange(w)
	if err != nil {
		t.Fatal(err)
	}
	var out []raft.Log
	for i := first; i <= last && first > 0; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		l.AppendedAt = l.AppendedAt.UTC()
		out = append(out, l)
	}
	return out
}

// toBolt copies the closed node's WAL into raft.db, as the log was kept
// before raft-wal.
func toBolt(t *testing.T, dir string) {
	t.Helper()
	w := openTestWAL(t, dir)
	defer w.Close()
	b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := migrate.CopyLogs(context.Background(), b, w, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
}

func boltRange(t *testing.T, dir string) (uint64, uint64) {
	t.Helper()
	b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first, last, err := raftnode.LogRange(b)
	if err != nil {
		t.Fatal(err)
	}
	return first, last
}

// openTestWAL opens the closed node's WAL as the node does.
func openTestWAL(t *testing.T, dir string) interface {
	raft.LogStore
	Close() error
} {
	t.Helper()
	w, err := raftnode.OpenWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestLogBehindSnapshotEmptied: a node killed after raft saved a snapshot
// it installs (a restore, or one a leader sent) but before it emptied the
// log holds a log that ends before the snapshot. It starts, with the
// snapshot's state, and commits again: the WAL would otherwise refuse every
// append as not following its last entry.
func TestLogBehindSnapshotEmptied(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir)
	apply(t, n, account("a", 100))
	apply(t, n, video("v1", "a", 7, "idem-1"))
	apply(t, n, account("b", 5))
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	snapIndex, _ := strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
	accounts, videos, keys := []string{"a", "b"}, []string{"v1"}, []string{"a-key", "b-key"}
	before := read(t, n, accounts, videos, keys)
	closeNode(t, n)

	// Cut the log's last two entries, which the snapshot holds: the log now
	// ends before the snapshot, as when the node was killed mid-install.
	w := openTestWAL(t, dir)
	first, last, err := raftnode.LogRange(w)
	if err != nil || last != snapIndex || first >= last-2 {
		t.Fatalf("log [%d, %d] (%v) with a snapshot at %d", first, last, err, snapIndex)
	}
	if err := w.DeleteRange(last-1, last); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	n = open(t, dir)
	defer closeNode(t, n)
	barrier(t, n)
	if after := read(t, n, accounts, videos, keys); !equalState(before, after) {
		t.Fatalf("state after the restart\n%+v\nwant\n%+v", after, before)
	}
	apply(t, n, account("c", 1)) // it commits again
	if got := read(t, n, []string{"c"}, nil, nil); got.balances["c"] != 1 {
		t.Fatalf("after a new write: %+v", got)
	}
}

// TestTruncatedTailSurvivesRestart: a follower whose last entries a new
// leader overwrote (raft deletes the log's tail, then appends the leader's
// entries) reads its whole log after a restart. raft-wal v0.4.0 marked the
// cut segment sealed without writing its index, and every entry before the
// cut became unreadable ("sealed segment has no index block",
// hashicorp/raft-wal#31): such a node panicked at its next start.
func TestTruncatedTailSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	w := openTestWAL(t, dir)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteRange(9, 10); err != nil { // the new leader's entries differ from 9 on
		t.Fatal(err)
	}
	if err := w.StoreLogs([]*raft.Log{{Index: 9, Term: 2, Type: raft.LogCommand, Data: []byte{99}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openTestWAL(t, dir)
	defer w.Close()
	for i := uint64(1); i <= 9; i++ {
		var l raft.Log
		want := byte(i)
		if i == 9 {
			want = 99
		}
		if err := w.GetLog(i, &l); err != nil || len(l.Data) != 1 || l.Data[0] != want {
			t.Errorf("entry %d after the restart: %v %v, want data %d", i, l.Data, err, want)
		}
	}
}

// TestLogFailureStopsTheNode: once the node's log refuses a write, its
// owner hears of it (Config.OnLogFailure) once, with the log's error; the
// proposal fails rather than hang.
func TestLogFailureStopsTheNode(t *testing.T) {
	failed := make(chan error, 2)
	n := open(t, t.TempDir(), func(c *raftnode.Config) { c.OnLogFailure = func(err error) { failed <- err } })
	defer closeNode(t, n)
	apply(t, n, account("a", 100))
	if err := raftnode.BreakLog(n); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := n.Apply(ctx, account("b", 1)); err == nil {
		t.Fatal("a proposal on a broken log succeeded")
	}
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), "write the raft log") {
			t.Fatalf("reported %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the log's failure was not reported")
	}
	if len(failed) != 0 {
		t.Fatalf("reported more than once: %v", <-failed)
	}
}

// TestCutSnapshotRemoved: a snapshot a node was killed while writing (raft's
// *.tmp directory) is gone after the next start; whole ones stay.
func TestCutSnapshotRemoved(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir)
	apply(t, n, account("a", 100))
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	closeNode(t, n)
	cut := filepath.Join(dir, "snapshots", "2-99-1795000000000.tmp")
	if err := os.MkdirAll(cut, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cut, "state.bin"), []byte("half a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	n = open(t, dir)
	defer closeNode(t, n)
	if _, err := os.Stat(cut); !os.IsNotExist(err) {
		t.Fatalf("the cut snapshot is still there: %v", err)
	}
	whole, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*"))
	if len(whole) == 0 {
		t.Fatal("the whole snapshot went too")
	}
}
