package raftnode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// checkpointSnapshots is Raft's file snapshot store, except that a snapshot
// the FSM took is a checkpoint marker (fsm/checkpoint.go): Open streams the
// checkpoint it names from the state file into a temporary file beside the
// snapshots, so Raft can send or restore it with its exact size, and deletes
// that file once read. Snapshots received from a leader or restored from a
// backup are whole streams and pass through unchanged.
type checkpointSnapshots struct {
	*raft.FileSnapshotStore
	fsm *fsm.FSM
	dir string
	log *slog.Logger
}

const checkpointStreamGlob = "checkpoint-*.stream"

func newCheckpointSnapshots(files *raft.FileSnapshotStore, f *fsm.FSM, dir string, log *slog.Logger) *checkpointSnapshots {
	// Streams left by a node that stopped while sending one.
	if old, err := filepath.Glob(filepath.Join(dir, checkpointStreamGlob)); err == nil {
		for _, p := range old {
			_ = os.Remove(p)
		}
	}
	return &checkpointSnapshots{FileSnapshotStore: files, fsm: f, dir: dir, log: log}
}

func (c *checkpointSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := c.FileSnapshotStore.Open(id)
	if err != nil || meta.Size != int64(fsm.CheckpointMarkerSize) {
		return meta, rc, err
	}
	head, err := io.ReadAll(rc)
	// Closing checks the file's CRC.
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot %s: %w", id, err)
	}
	index, ok := fsm.CheckpointMarker(head)
	if !ok {
		return meta, io.NopCloser(bytes.NewReader(head)), nil
	}
	tmp, err := os.CreateTemp(c.dir, checkpointStreamGlob)
	if err != nil {
		return nil, nil, fmt.Errorf("stream checkpoint %d: %w", index, err)
	}
	fail := func(err error) (*raft.SnapshotMeta, io.ReadCloser, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, fmt.Errorf("stream checkpoint %d: %w", index, err)
	}
	// Minutes at millions of videos: say how far it is every ten seconds.
	cw := &countingWriter{w: tmp}
	bw := bufio.NewWriterSize(cw, 1<<20)
	began := time.Now()
	c.log.Info("streaming a checkpoint for a snapshot", "index", index)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				c.log.Info("streaming a checkpoint for a snapshot", "index", index, "bytes", cw.n.Load(), "elapsed", time.Since(began).Round(time.Second).String())
			}
		}
	}()
	err = c.fsm.WriteCheckpoint(bw, index)
	if err == nil {
		err = bw.Flush()
	}
	close(done)
	if err != nil {
		return fail(err)
	}
	c.log.Info("checkpoint streamed; sending the snapshot", "index", index, "bytes", cw.n.Load(), "took", time.Since(began).Round(time.Millisecond).String())
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return fail(err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	m := *meta
	m.Size = size
	return &m, &removeOnClose{File: tmp}, nil
}

// removeOnClose is a temporary file deleted when closed.
type removeOnClose struct{ *os.File }

func (r *removeOnClose) Close() error {
	err := r.File.Close()
	if rerr := os.Remove(r.Name()); err == nil {
		err = rerr
	}
	return err
}

// countingWriter counts what passes through it; read from another goroutine.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// removeCutSnapshots deletes the snapshots a node stopped while writing:
// raft's file store writes one in a directory named *.tmp and renames it
// once whole, never reads a *.tmp one, and never deletes one either, so
// each kill mid-snapshot (of a state of millions of videos, minutes) would
// leave its partial copy on the disk for good.
func removeCutSnapshots(dataDir string, log *slog.Logger) {
	cut, err := filepath.Glob(filepath.Join(dataDir, "snapshots", "*.tmp"))
	if err != nil {
		return
	}
	for _, dir := range cut {
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("remove a snapshot cut short", "dir", dir, "err", err)
			continue
		}
		log.Info("removed a snapshot cut short by a stop", "dir", dir)
	}
}
