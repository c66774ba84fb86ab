package fsm

import (
	"fmt"
	"io"

	"go.etcd.io/bbolt"
)

// BackupInfo describes a backup stream that was read back.
type BackupInfo struct {
	Accounts int `json:"accounts"`
	Videos   int `json:"videos"`
	Nodes    int `json:"nodes"`
	// Index is the Raft index the state had applied when it was backed up,
	// in the cluster it came from: a restore must install it at a later
	// index of its own cluster (raftnode.Node.Restore).
	Index uint64 `json:"index"`
	// Secrets are the backup's webhooks' stored signing secrets, by webhook
	// id: a restore checks that the sealed ones open with the node's key.
	Secrets []StoredSecret `json:"-"`
}

// WriteBackup writes the whole state to w in the snapshot format: the same bytes
// a Raft snapshot holds, CRC trailer included, so a backup can be checked before
// it is restored and restored through Raft like any snapshot.
func (f *FSM) WriteBackup(w io.Writer) error {
	records, tx, err := f.backupView()
	if err != nil {
		return err
	}
	if tx == nil {
		return writeSnapshot(w, records, nil)
	}
	defer tx.Rollback()
	return writeSnapshot(w, records, tx)
}

// backupView copies the hot state and, with a state file, begins the read
// transaction the rest is read from, under the read lock: the deferred
// unlock lets a panic here go without leaving every later write waiting.
func (f *FSM) backupView() ([]record, *bbolt.Tx, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	records := f.s.records(false)
	if f.s.disk == nil {
		return records, nil, nil
	}
	// The read transaction begins under the lock, so it and the copy show
	// the same state: a checkpoint commit waits for nothing, but a video it
	// writes is then in both, and the merge takes it once.
	// Videos on disk changed in memory since (a sweep) go with their
	// account's record, to be written instead of the disk's copy.
	if len(f.s.listedOnDisk) > 0 {
		at := map[string]int{}
		for i, r := range records {
			if av, ok := r.v.(accountVideos); ok {
				at[av.account] = i
			}
		}
		for id := range f.s.listedOnDisk {
			v := f.s.videos[id]
			i := at[v.AccountID]
			av := records[i].v.(accountVideos)
			if av.changed == nil {
				av.changed = map[string]Video{}
			}
			av.changed[id] = v.Clone()
			records[i].v = av
		}
	}
	tx, err := f.s.disk.db.Begin(false)
	if err != nil {
		return nil, nil, fmt.Errorf("backup: read state store: %w", err)
	}
	return records, tx, nil
}

// CheckBackup reads a backup stream to its end without applying it, and says
// what it holds; a truncated or altered stream is an error.
func CheckBackup(r io.Reader) (BackupInfo, error) {
	// Finished videos are counted, not kept: a backup may hold millions.
	sink := &restoreSink{}
	s, err := readSnapshot(r, readOpts{sink: sink})
	if err != nil {
		return BackupInfo{}, fmt.Errorf("check backup: %w", err)
	}
	return BackupInfo{Accounts: len(s.accounts), Videos: len(s.videos) + sink.n, Nodes: len(s.nodes), Index: s.out.index,
		Secrets: s.storedSecrets()}, nil
}
