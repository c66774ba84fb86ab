package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
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

// streamCheckpoint turns the hot stream tx holds back into records, each
// account's videos in memory gathered into an accountVideos record to merge
// with its videos on disk, and writes the whole.
func streamCheckpoint(tx *bbolt.Tx, w io.Writer) error {
	hot, extra, err := readHot(tx)
	if err != nil {
		return err
	}
	var (
		recs    []record
		pending *accountVideos // of the account whose records are being read
		header  bool           // its keys and folders, before its videos
	)
	flush := func() {
		if pending != nil {
			recs = append(recs, record{recAccountVideos, *pending})
			pending = nil
		}
		header = false
	}
	err = eachRecord(hot, func(t recordType, body []byte) error {
		switch {
		case t == recAccount:
			flush()
			var a Account
			if err := msgpack.Unmarshal(body, &a); err != nil {
				return fmt.Errorf("decode account: %w", err)
			}
			pending, header = &accountVideos{account: a.ID}, true
		case pending != nil && t == recVideo:
			var v Video
			if err := msgpack.Unmarshal(body, &v); err != nil {
				return fmt.Errorf("decode video: %w", err)
			}
			seq, ok := extra.Seqs[v.ID]
			if !ok {
				return fmt.Errorf("video %s has no sequence number", v.ID)
			}
			pending.mem = append(pending.mem, seqVideo{v, seq})
			header = false
			return nil
		case header && (t == recKey || t == recFolder):
		default:
			flush()
		}
		recs = append(recs, record{t, rawBody(body)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("hot state: %w", err)
	}
	flush()
	return writeSnapshot(w, recs, diskVideos(tx))
}
