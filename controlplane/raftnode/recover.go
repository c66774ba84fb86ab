package raftnode

import (
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// Recovery is what Recover did.
type Recovery struct {
	// Previous are the servers of the configuration the node held before.
	Previous []Server
	// Index is the last log entry the node held, now in the new snapshot.
	Index uint64
	// Address is the Raft address the node is the one voter at.
	Address string
}

// ErrNothingToRecover is Recover's answer for a data directory that holds no
// Raft state: there is nothing to keep, and a new node bootstraps or joins.
var ErrNothingToRecover = errors.New("raftnode: the data directory holds no raft state to recover")

// Recover makes the node of cfg's data directory the one voter of a new
// configuration, keeping every entry its log holds, so that it can lead
// alone after the cluster lost its quorum for good (two of three voters
// gone with their disks). It is raft's RecoverCluster: the newest snapshot
// is restored, every entry of the log after it applied (entries the lost
// quorum may never have committed too: they are the most this node knows),
// a snapshot of the result taken with the new configuration, and the log
// emptied. The node must not be running (the stable store's lock says so).
// The node is then started as usual; other nodes join it afresh, and the
// lost members must never start again on their old data, or they could
// elect a leader of the old configuration between them.
func Recover(cfg Config, f *fsm.FSM) (Recovery, error) {
	rc, err := raftConfig(&cfg)
	if err != nil {
		return Recovery{}, err
	}
	addr := cfg.Advertise
	if addr == "" {
		addr = cfg.RaftAddr
	}
	if host, port, err := net.SplitHostPort(addr); err != nil || port == "0" || host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		return Recovery{}, fmt.Errorf("raftnode: recover needs the address other nodes will reach this one at (--raft-advertise, or a --raft-listen with a host and port), not %q", addr)
	}
	st, err := openStores(cfg, rc, f)
	if err != nil {
		return Recovery{}, err
	}
	defer st.close()
	existing, err := raft.HasExistingState(st.logs, st.store, st.snaps)
	if err != nil {
		return Recovery{}, fmt.Errorf("inspect raft state: %w", err)
	}
	if !existing {
		return Recovery{}, ErrNothingToRecover
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(addr))
	defer trans.Close()
	// Reading the configuration need not restore the state: RecoverCluster
	// restores it next, and at ten million videos each restore is minutes.
	prevCfg := *rc
	prevCfg.NoSnapshotRestoreOnStart = true
	prev, err := raft.GetConfiguration(&prevCfg, f, st.logs, st.store, st.snaps, trans)
	if err != nil {
		return Recovery{}, fmt.Errorf("read the configuration before recovery: %w", err)
	}
	out := Recovery{Address: addr}
	for _, sv := range prev.Servers {
		out.Previous = append(out.Previous, Server{ID: string(sv.ID), RaftAddr: string(sv.Address), Suffrage: sv.Suffrage.String()})
	}
	if out.Index, err = lastIndex(st.logs, st.snaps); err != nil {
		return Recovery{}, err
	}
	alone := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: raft.ServerAddress(addr)}}}
	if err := raft.RecoverCluster(rc, f, st.logs, st.store, st.snaps, trans, alone); err != nil {
		return Recovery{}, fmt.Errorf("recover the cluster: %w", err)
	}
	cfg.Logger.Warn("recovered: this node is now the only voter of a new configuration",
		"node_id", cfg.NodeID, "raft_addr", addr, "index", out.Index, "previous_servers", len(out.Previous))
	return out, nil
}

// lastIndex is the last entry the log or the newest snapshot holds.
func lastIndex(logs raft.LogStore, snaps raft.SnapshotStore) (uint64, error) {
	last, err := logs.LastIndex()
	if err != nil {
		return 0, fmt.Errorf("read the log's last index: %w", err)
	}
	metas, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("list snapshots: %w", err)
	}
	if len(metas) > 0 && metas[0].Index > last {
		last = metas[0].Index
	}
	return last, nil
}
