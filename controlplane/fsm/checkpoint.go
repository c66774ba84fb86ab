package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/bbolt"
)

// With a state file, a Raft snapshot is a checkpoint (store.go), and what
// Persist gives Raft's snapshot store is a marker naming its index, not a
// copy of the state: the state file already is that copy, and writing ten
// million videos out again every 8192 entries would cost more than the
// entries. When a follower needs the snapshot, or a node restores one,
// WriteCheckpoint streams it from the state file (raftnode's snapshot store
// does this in Open), in the ordinary snapshot format.

const checkpointMagic = "vidfarm-checkpoint-v1\n"

// CheckpointMarkerSize is the size of a checkpoint marker.
const CheckpointMarkerSize = len(checkpointMagic) + 8

// ErrCheckpointGone is returned for a checkpoint the state file no longer
// holds: a later one replaced it.
var ErrCheckpointGone = errors.New("fsm: the state file holds another checkpoint")

func checkpointMarker(index uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(checkpointMagic), index)
}

// CheckpointMarker reports whether b is a checkpoint marker, and its index.
func CheckpointMarker(b []byte) (uint64, bool) {
	if len(b) != CheckpointMarkerSize || !bytes.HasPrefix(b, []byte(checkpointMagic)) {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[len(checkpointMagic):]), true
}

// WriteCheckpoint writes the snapshot of the checkpoint at index to w, read
// from one read transaction of the state file while applies and later
// checkpoints go on. Memory holds the hot part and one record at a time.
func (f *FSM) WriteCheckpoint(w io.Writer, index uint64) error {
	f.mu.RLock()
	st := f.s.disk
	f.mu.RUnlock()
	if st == nil {
		return errors.New("fsm: no state file to read a checkpoint from")
	}
	tx, err := st.db.Begin(false)
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	defer tx.Rollback()
	b := tx.Bucket([]byte(bucketMeta)).Get([]byte(metaIndex))
	if len(b) != 8 || binary.BigEndian.Uint64(b) != index {
		return fmt.Errorf("checkpoint %d: %w", index, ErrCheckpointGone)
	}
	return streamCheckpoint(tx, w)
}

// streamCheckpoint loads the hot part tx holds (the hot stream and the
// records kept one per key) into a state of its own and writes the whole,
// merging each account's unfinished videos with its finished ones on disk.
// The copy costs the hot part's memory once more while a follower is sent
// its snapshot (the task graphs as records: no scheduler is rebuilt from
// them only to be snapshotted again); the finished videos go one at a time.
func streamCheckpoint(tx *bbolt.Tx, w io.Writer) error {
	s, _, err := loadState(tx, readOpts{rawSched: true})
	if err != nil {
		return fmt.Errorf("hot state: %w", err)
	}
	if s == nil {
		return errors.New("the state file holds no checkpoint")
	}
	return writeSnapshot(w, s.records(false), tx)
}
