package server

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// Recover makes the node of cfg's data directory the one voter of a new
// cluster after the old one lost its quorum for good, keeping all it holds
// (raftnode.Recover says how); the node is then started as usual, with
// cfg, and the other nodes join it afresh. It needs what a start needs to
// find the data (DataDir, NodeID, the Raft address others reach it at) and
// nothing else; the node must not be running.
func Recover(cfg Config) (raftnode.Recovery, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DataDir == "" || cfg.NodeID == "" {
		return raftnode.Recovery{}, fmt.Errorf("recover: --data-dir and --node-id are required: the data directory and the id of the node to keep")
	}
	if err := checkRaftAdvertise(cfg.RaftListen, cfg.RaftAdvertise); err != nil {
		return raftnode.Recovery{}, err
	}
	f, err := fsm.Open(filepath.Join(cfg.DataDir, "state.db"))
	if err != nil {
		return raftnode.Recovery{}, err
	}
	rec, err := raftnode.Recover(raftConfig(cfg), f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close the state file: %w", cerr)
	}
	return rec, err
}
