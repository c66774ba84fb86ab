package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	walmetrics "github.com/hashicorp/raft-wal/metrics"
	"github.com/hashicorp/raft-wal/migrate"
)

// The Raft log lives in raft-wal (<data-dir>/raft/wal), the log store
// Consul moved to: segment files appended to and fsynced once per batch,
// with no B-tree pages to copy on write and no msgpack handle built for
// every entry, which raft-boltdb did on the leader's one loop that every
// proposal waits for. Under 64-client create load it cut the server's CPU
// per create by 2-12% in four alternated pairs (docs/benchmarks.md). The stable store (term and
// vote, written at elections) stays in raft.db, whose file lock keeps a
// second node off the data directory.
//
// A data directory from before keeps its log in raft.db. openLog copies it
// into a new WAL beside, renames that into place only once it is whole, and
// then empties raft.db's log; a crash at any step leaves either the old log
// or the whole new one.

// walDir is the WAL's directory under the Raft data directory.
const walDir = "wal"

// walSegmentSize is the default size of a WAL segment file, preallocated when it
// is created. raft-wal's default is 64 MiB; a quarter of it keeps the
// disk a node takes small (every test node allocates one) while an entry
// of a few hundred bytes still fills a segment only every tens of
// thousands of entries.
const walSegmentSize = 16 << 20

// migrateBatchBytes is how much log data one append of the copy carries.
const migrateBatchBytes = 4 << 20

// walLog is a WAL with the metadata store it was opened with: raft-wal
// v0.4.0's Close (and v0.4.2's) leaves that store's bbolt file open, and locked, so a
// node closed and opened again in one process (a restart in the tests, the
// copy renamed into place) would wait for the lock forever.
type walLog struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
	// stats counts what the WAL wrote, read and cut since it was opened
	// (Node.LogStats): raft's own timings say how long a write took, not
	// how many bytes the disk took or how often a segment filled.
	stats *walmetrics.AtomicCollector
}

// Close closes the WAL, then its metadata store.
func (w *walLog) Close() error {
	err := w.WAL.Close()
	if cerr := w.meta.Close(); err == nil {
		err = cerr
	}
	return err
}

func openWAL(dir string, segmentSize int, hlog hclog.Logger) (*walLog, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	meta := &metadb.BoltMetaDB{}
	stats := walmetrics.NewAtomicCollector(wal.MetricDefinitions)
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(segmentSize), wal.WithLogger(hlog.Named("wal")),
		wal.WithMetricsCollector(stats))
	if err != nil {
		meta.Close()
		return nil, err
	}
	return &walLog{WAL: w, meta: meta, stats: stats}, nil
}

// openLog opens the node's Raft log, first moving a log that raft.db still
// holds into it.
func openLog(dataDir string, segmentSize int, old *raftboltdb.BoltStore, log *slog.Logger, hlog hclog.Logger) (*walLog, error) {
	dir := filepath.Join(dataDir, walDir)
	_, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := moveLog(dataDir, segmentSize, old, log, hlog); err != nil {
			return nil, fmt.Errorf("move the Raft log from raft.db to %s: %w", dir, err)
		}
	case err != nil:
		return nil, fmt.Errorf("raft log: %w", err)
	}
	w, err := openWAL(dir, segmentSize, hlog)
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", dir, err)
	}
	// The copy is in place: what raft.db still holds of the log is stale
	// (a crash came between the rename and this, or this is the first
	// start after the copy).
	first, last, err := logRange(old)
	if err == nil && first > 0 {
		err = old.DeleteRange(first, last)
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("empty raft.db's old log: %w", err)
	}
	return w, nil
}

// moveLog writes raft.db's log (none on a new node) into a new WAL and
// renames the WAL into place once it is whole.
func moveLog(dataDir string, segmentSize int, old *raftboltdb.BoltStore, log *slog.Logger, hlog hclog.Logger) error {
	tmp := filepath.Join(dataDir, walDir+".tmp")
	if err := os.RemoveAll(tmp); err != nil { // an earlier copy cut short
		return err
	}
	w, err := openWAL(tmp, segmentSize, hlog)
	if err != nil {
		return err
	}
	first, last, err := logRange(old)
	if err == nil && first > 0 {
		log.Info("moving the Raft log from raft.db to raft-wal", "entries", last-first+1, "first", first, "last", last)
		progress := make(chan string, 64)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for p := range progress {
				log.Info("moving the Raft log", "progress", p)
			}
		}()
		err = migrate.CopyLogs(context.Background(), w, old, migrateBatchBytes, progress) // closes progress
		<-done
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, walDir)); err != nil {
		return err
	}
	return syncDir(dataDir)
}

// failingLog tells the node's owner, once, that the log refused a write.
// raft-wal fails every write after one it could not make (a full disk
// during a segment's rotation leaves its tail sealed), and raft meanwhile
// steps down and is elected again and again: the node can take no part in
// the cluster until it is restarted, and clients of it see "no leader". So
// the first failed write is the node's end (Config.OnLogFailure), as etcd
// stops on a WAL it cannot write: its supervisor restarts it, and it comes
// back once the disk has room, with everything it had acknowledged.
type failingLog struct {
	raft.LogStore
	once   sync.Once
	failed func(error)
}

func (l *failingLog) StoreLog(e *raft.Log) error { return l.check(l.LogStore.StoreLog(e)) }

func (l *failingLog) StoreLogs(es []*raft.Log) error { return l.check(l.LogStore.StoreLogs(es)) }

func (l *failingLog) check(err error) error {
	if err != nil && l.failed != nil {
		l.once.Do(func() { l.failed(fmt.Errorf("write the raft log: %w", err)) })
	}
	return err
}

// IsMonotonic keeps raft treating the log as the WAL it wraps (it empties
// a monotonic log after installing a snapshot rather than leaving a gap).
func (l *failingLog) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// dropLogBehindSnapshot empties a log that ends before the newest snapshot.
// Raft saves a snapshot it installs (an operator's restore, or one a leader
// sent a follower far behind) before it empties the log, and empties a
// monotonic log such as the WAL only once the state machine has restored
// it; a node killed in between holds a log that ends before the snapshot
// begins. Raft then starts its log after the snapshot, and the WAL refuses
// every later append as not following its last entry: the node could never
// commit again. The snapshot holds everything up to its index, and an
// entry of the log before it is either in it or superseded by it, so the
// log is emptied, as raft would have done.
func dropLogBehindSnapshot(wal raft.LogStore, snaps raft.SnapshotStore, log *slog.Logger) error {
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	first, last, err := logRange(wal)
	if err != nil || last == 0 || last >= metas[0].Index {
		return err
	}
	log.Warn("the raft log ends before the newest snapshot (a restore or a snapshot sent by the leader was cut short): emptying the log; the state is the snapshot's",
		"log_first_index", first, "log_last_index", last, "snapshot_index", metas[0].Index, "snapshot_id", metas[0].ID)
	if err := wal.DeleteRange(first, last); err != nil {
		return fmt.Errorf("empty the raft log [%d, %d] behind snapshot %s: %w", first, last, metas[0].ID, err)
	}
	return nil
}

// logRange is the first and last index of a log store's log (raft.db's, or
// the WAL's); 0, 0 when it holds none.
func logRange(s raft.LogStore) (first, last uint64, err error) {
	if first, err = s.FirstIndex(); err == nil {
		last, err = s.LastIndex()
	}
	return first, last, err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
