package fsm

import (
	"fmt"
	"io"
)

// BackupInfo describes a backup stream that was read back.
type BackupInfo struct {
	Accounts int `json:"accounts"`
	Videos   int `json:"videos"`
	Nodes    int `json:"nodes"`
}

// WriteBackup writes the whole state to w in the snapshot format: the same bytes
// a Raft snapshot holds, CRC trailer included, so a backup can be checked before
// it is restored and restored through Raft like any snapshot.
func (f *FSM) WriteBackup(w io.Writer) error {
	f.mu.RLock()
	records := f.s.records(false)
	disk := f.s.disk
	if disk == nil {
		f.mu.RUnlock()
		return writeSnapshot(w, records, nil)
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
	tx, err := disk.db.Begin(false)
	f.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("backup: read state store: %w", err)
	}
	defer tx.Rollback()
	return writeSnapshot(w, records, tx)
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
	return BackupInfo{Accounts: len(s.accounts), Videos: len(s.videos) + sink.n, Nodes: len(s.nodes)}, nil
}
