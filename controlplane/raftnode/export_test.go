package raftnode

import (
	"path/filepath"

	"github.com/hashicorp/go-hclog"
)

// OpenWAL opens the log of a closed node's data directory dir as the node
// does, for tests to read it.
func OpenWAL(dir string) (*walLog, error) {
	return openWAL(filepath.Join(dir, walDir), walSegmentSize, hclog.NewNullLogger())
}

// LogRange is logRange, for the tests' log stores.
var LogRange = logRange

// BreakLog closes the node's WAL under raft, so that every later write to
// the log fails as a disk's would.
func BreakLog(n *Node) error { return n.wal.WAL.Close() }
