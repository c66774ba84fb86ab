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
