package raftnode

import (
	"errors"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// fullDisk is a log whose writes fail as a full disk's do; reads pass.
type fullDisk struct {
	raft.LogStore
}

func (fullDisk) StoreLog(*raft.Log) error    { return syscall.ENOSPC }
func (fullDisk) StoreLogs([]*raft.Log) error { return syscall.ENOSPC }
func (fullDisk) IsMonotonic() bool           { return true }

// TestFailingLogReportsOnce: the first write the log refuses is reported,
// once, wrapped with what failed, and every write still answers its error
// to raft; the wrapper stays monotonic, as raft must see the WAL.
func TestFailingLogReportsOnce(t *testing.T) {
	var reported []error
	l := &failingLog{LogStore: fullDisk{raft.NewInmemStore()}, failed: func(err error) { reported = append(reported, err) }}
	for range 3 {
		if err := l.StoreLogs([]*raft.Log{{Index: 1}}); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("StoreLogs: %v", err)
		}
	}
	if err := l.StoreLog(&raft.Log{Index: 1}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StoreLog: %v", err)
	}
	if len(reported) != 1 || !errors.Is(reported[0], syscall.ENOSPC) {
		t.Fatalf("reported %v, want the first failure once", reported)
	}
	if !l.IsMonotonic() {
		t.Error("the wrapper hides the WAL's monotonic log from raft")
	}
	ok := &failingLog{LogStore: raft.NewInmemStore(), failed: func(err error) { t.Errorf("reported %v for a write that worked", err) }}
	if err := ok.StoreLogs([]*raft.Log{{Index: 1, Type: raft.LogCommand}}); err != nil || ok.IsMonotonic() {
		t.Fatalf("a working store: %v, monotonic %t", err, ok.IsMonotonic())
	}
}
