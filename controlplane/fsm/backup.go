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
	records := f.s.records()
	f.mu.RUnlock()
	return writeSnapshot(w, records)
}

// CheckBackup reads a backup stream to its end without applying it, and says
// what it holds; a truncated or altered stream is an error.
func CheckBackup(r io.Reader) (BackupInfo, error) {
	s, err := readSnapshot(r)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("check backup: %w", err)
	}
	return BackupInfo{Accounts: len(s.accounts), Videos: len(s.videos), Nodes: len(s.nodes)}, nil
}
