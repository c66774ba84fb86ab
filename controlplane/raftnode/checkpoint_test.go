package raftnode_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// TestFollowerCatchesUpFromCheckpoint adds a node to a cluster whose log was
// compacted behind a checkpoint, so the leader must send a snapshot: its
// snapshot store holds only a marker, and the snapshot is streamed from the
// leader's state file. The new node restores it into its own state file,
// finished videos on disk, and ends with the leader's state, byte for byte.
func TestFollowerCatchesUpFromCheckpoint(t *testing.T) {
	small := func(c *raftnode.Config) { c.TrailingLogs, c.WALSegmentSize = 1, 512 }
	dir1 := t.TempDir()
	n1 := open(t, dir1, small)
	defer closeNode(t, n1)
	apply(t, n1, account("a", 100))
	apply(t, n1, video("v1", "a", 7, "idem-1"))
	apply(t, n1, video("v2", "a", 3, ""))
	apply(t, n1, &fsm.FailVideo{VideoID: "v2", Reason: "x", Now: t0})
	if err := n1.Snapshot(); err != nil {
		t.Fatal(err)
	}
	apply(t, n1, video("v3", "a", 5, ""))
	apply(t, n1, &fsm.FailVideo{VideoID: "v3", Reason: "y", Now: t0})
	if err := n1.Snapshot(); err != nil {
		t.Fatal(err)
	}
	apply(t, n1, account("b", 1)) // after the checkpoint: only in the log
	marker, _ := filepath.Glob(filepath.Join(dir1, "snapshots", "*", "state.bin"))
	for _, p := range marker {
		if st, err := os.Stat(p); err != nil || st.Size() != int64(fsm.CheckpointMarkerSize) {
			t.Fatalf("snapshot %s: %v, %v bytes; want a checkpoint marker", p, err, st.Size())
		}
	}

	dir2 := t.TempDir()
	n2 := open(t, dir2, func(c *raftnode.Config) { c.NodeID, c.Join = "node2", true })
	defer closeNode(t, n2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n1.AddVoter(ctx, "node2", n2.RaftAddr()); err != nil {
		t.Fatal(err)
	}
	for n2.FSM.AppliedIndex() < n1.FSM.AppliedIndex() {
		if ctx.Err() != nil {
			t.Fatalf("follower applied %d of %d", n2.FSM.AppliedIndex(), n1.FSM.AppliedIndex())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var b1, b2 bytes.Buffer
	if err := n1.FSM.WriteBackup(&b1); err != nil {
		t.Fatal(err)
	}
	if err := n2.FSM.WriteBackup(&b2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Fatal("the follower's state differs from the leader's")
	}
	if ts := n2.FSM.TierStats(); ts.VideosOnDisk != 2 {
		t.Fatalf("follower holds %+v; want the two failed videos on disk", ts)
	}
	if left, _ := filepath.Glob(filepath.Join(dir1, "checkpoint-*.stream")); len(left) != 0 {
		t.Fatalf("streams left behind: %v", left)
	}
}
