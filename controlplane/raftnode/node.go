// Package raftnode runs the Raft node that replicates the control plane's FSM:
// hashicorp/raft over TCP, raft-wal as its log (logstore.go), raft-boltdb (bbolt)
// as its stable store, and a file snapshot store, all under one data directory. It
// bootstraps a single-node cluster when the directory is new, which is the embedded
// default, and offers one Apply helper that proposes a command, waits for it and
// unwraps the FSM's answer.
package raftnode

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	walmetrics "github.com/hashicorp/raft-wal/metrics"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// ErrNotLeader means this node cannot take writes because it is not the leader.
// Every layer that proposes matches it with errors.Is.
var ErrNotLeader = errors.New("not the raft leader")

// ErrTimeout means a proposal did not commit within its deadline; it may still commit.
var ErrTimeout = errors.New("raft apply timed out")

// DefaultSnapshotThreshold is how many new log entries trigger a snapshot
// unless Config says otherwise.
const DefaultSnapshotThreshold = 8192

// Config says where the node keeps its data and how it talks to peers.
type Config struct {
	DataDir  string
	NodeID   string
	RaftAddr string // listen address for Raft traffic, e.g. 127.0.0.1:7000
	// Advertise is the address peers dial; defaults to RaftAddr's bound address.
	Advertise string
	// Logger gets the node's lines and Raft's own (with "component":"raft",
	// see raftlog.go), filtered by its handler's level; nil is slog.Default().
	Logger *slog.Logger
	// NoSync skips fsync on the stable store (raft.db); the log, raft-wal,
	// always syncs. Only for tests of things other than durability; servers
	// always sync.
	NoSync bool
	// WALSegmentSize is the size of the log's segment files (0: 16 MiB).
	// Tests make it small so that compaction deletes whole segments: raft-wal
	// still answers an entry truncated away while its segment is kept, so a
	// follower far behind gets the log instead of a snapshot until then.
	WALSegmentSize int
	// SnapshotThreshold is how many new log entries trigger a snapshot
	// (default DefaultSnapshotThreshold); TrailingLogs how many entries stay after compaction (default 10240).
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// SnapshotInterval is how often Raft checks the threshold (default 1 s,
	// where Raft's own is 2 minutes): a checkpoint copies, under the FSM's
	// lock, what changed since the last one, so the writes stop for a time
	// that grows with the entries between checkpoints (about 6 µs each);
	// checking often keeps that near the threshold's worth under any load.
	SnapshotInterval time.Duration
	// Join says this node will be added to an existing cluster by its leader, so a
	// new data directory must not bootstrap a cluster of its own.
	Join bool
	// TLS, when set, carries Raft over mutual TLS with these settings (see
	// tlsconf.Mutual); nil is plain TCP.
	TLS *tls.Config
	// Timing is how quickly the node suspects a leader and gives up a
	// leadership; the zero value is DefaultTiming.
	Timing Timing
	// OnLogFailure is called, once, when the Raft log refuses a write (a
	// full or failing disk): the node can take no part in the cluster
	// until it is restarted (failingLog), so its owner stops it. nil:
	// the node goes on failing.
	OnLogFailure func(error)
}

// Timing holds Raft's failure-detection timeouts. A follower that hears
// nothing from its leader for a random time between Heartbeat and twice
// Heartbeat starts a pre-vote; a leader that cannot reach a majority for
// LeaderLease steps down. Shorter values fail over faster but let CPU
// starvation (a busy machine delaying heartbeats) pass for a dead leader.
type Timing struct {
	Heartbeat   time.Duration
	Election    time.Duration
	LeaderLease time.Duration
}

// DefaultTiming was chosen by measurement (docs/cluster.md, "Elections under
// load"): with 500/500/250 ms a three-node cluster on a starved two-core
// machine lost its leader with no fault; with these values the election soak
// sees no election in ten minutes, and failover after a SIGKILL of the leader
// stays well under 3 s.
var DefaultTiming = Timing{Heartbeat: 800 * time.Millisecond, Election: 800 * time.Millisecond, LeaderLease: 800 * time.Millisecond}

// withDefaults fills the unset fields from DefaultTiming and checks the
// relations Raft needs: a lease no longer than the heartbeat timeout.
func (t Timing) withDefaults() (Timing, error) {
	if t.Heartbeat <= 0 {
		t.Heartbeat = DefaultTiming.Heartbeat
	}
	if t.Election <= 0 {
		t.Election = DefaultTiming.Election
	}
	if t.LeaderLease <= 0 {
		t.LeaderLease = min(DefaultTiming.LeaderLease, t.Heartbeat)
	}
	if t.Heartbeat < 5*time.Millisecond || t.Election < 5*time.Millisecond || t.LeaderLease < 5*time.Millisecond {
		return t, fmt.Errorf("raft timeouts must be at least 5ms (heartbeat %s, election %s, leader lease %s)", t.Heartbeat, t.Election, t.LeaderLease)
	}
	if t.LeaderLease > t.Heartbeat {
		return t, fmt.Errorf("raft leader lease %s must not exceed the heartbeat timeout %s", t.LeaderLease, t.Heartbeat)
	}
	return t, nil
}

// Node is a running Raft member with its FSM.
type Node struct {
	Raft      *raft.Raft
	FSM       *fsm.FSM
	cfg       Config
	log       *slog.Logger
	store     *raftboltdb.BoltStore // the stable store: term and vote
	wal       *walLog               // the log
	transport *raft.NetworkTransport
	tls       *tlsStream // nil: plain TCP
	snaps     *checkpointSnapshots
	// existing is whether the data directory held Raft state when opened.
	existing bool
}

// Open starts the node; with a new data directory it bootstraps a cluster of itself.
func Open(cfg Config, f *fsm.FSM) (*Node, error) {
	rc, err := raftConfig(&cfg)
	if err != nil {
		return nil, err
	}
	st, err := openStores(cfg, rc, f)
	if err != nil {
		return nil, err
	}
	store, wlog, logs, snaps, closeStores := st.store, st.wal, st.logs, st.snaps, st.close
	var adv net.Addr
	if cfg.Advertise != "" {
		if adv, err = net.ResolveTCPAddr("tcp", cfg.Advertise); err != nil {
			closeStores()
			return nil, fmt.Errorf("resolve advertise address %q: %w", cfg.Advertise, err)
		}
	}
	transport, stream, err := openTransport(cfg, adv, rc.Logger)
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("raft transport on %s: %w", cfg.RaftAddr, err)
	}
	existing, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		transport.Close()
		closeStores()
		return nil, fmt.Errorf("inspect raft state: %w", err)
	}
	if err := resumeFrom(rc, f, existing, snaps, cfg.Logger); err != nil {
		transport.Close()
		closeStores()
		return nil, err
	}
	r, err := raft.NewRaft(rc, f, logs, store, snaps, transport)
	if err != nil {
		transport.Close()
		closeStores()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n := &Node{Raft: r, FSM: f, cfg: cfg, log: cfg.Logger, store: store, wal: wlog, transport: transport, tls: stream, snaps: snaps, existing: existing}
	if !existing && !cfg.Join {
		boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: transport.LocalAddr()}}}
		if err := r.BootstrapCluster(boot).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			n.Close()
			return nil, fmt.Errorf("bootstrap single-node cluster: %w", err)
		}
		n.log.Info("bootstrapped single-node cluster", "node_id", cfg.NodeID, "raft_addr", string(transport.LocalAddr()))
	}
	return n, nil
}

// raftConfig is the Raft configuration of a node of cfg, with cfg's
// defaults filled in.
func raftConfig(cfg *Config) (*raft.Config, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeID == "" {
		return nil, fmt.Errorf("raftnode: node id is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	timing, err := cfg.Timing.withDefaults()
	if err != nil {
		return nil, err
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = timing.Heartbeat
	rc.ElectionTimeout = timing.Election
	rc.LeaderLeaseTimeout = timing.LeaderLease
	// Pre-vote: a node that lost contact (a starved process, a partition)
	// asks whether it could win before it raises its term, so coming back
	// does not depose a healthy leader. hashicorp/raft ≥ 1.7 defaults to it
	// when the transport supports it; it is stated here so that nobody
	// loses it by accident (cmd/vidfarm TestChaosPartition checks it).
	rc.PreVoteDisabled = false
	rc.CommitTimeout = 5 * time.Millisecond
	// Batching: concurrent proposals queue up and are written with one fsync.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 512
	rc.SnapshotThreshold = orDefault(cfg.SnapshotThreshold, DefaultSnapshotThreshold)
	rc.TrailingLogs = orDefault(cfg.TrailingLogs, 10240)
	rc.SnapshotInterval = cmp.Or(cfg.SnapshotInterval, time.Second)
	// Raft, its transport, its snapshot store and raft-wal log through the
	// server's handler, at its level, with "component" saying whose line
	// it is (raftlog.go).
	rc.Logger = newRaftLog(cfg.Logger)
	// Raft reports each follower's replication twice, once labelled by
	// peer and once under a name per peer; the server exports the first.
	rc.NoLegacyTelemetry = true

	return rc, nil
}

// stores are a node's log, stable store and snapshots, open.
type stores struct {
	store *raftboltdb.BoltStore
	wal   *walLog
	logs  raft.LogStore
	snaps *checkpointSnapshots
	close func() // closes the log and the stable store
}

// openStores opens the stores of cfg's data directory as a node uses them:
// the stable store (which locks the directory), the WAL (moving an older
// directory's log into it first), the log cache and the snapshots, and
// empties a log left behind the newest snapshot.
func openStores(cfg Config, rc *raft.Config, f *fsm.FSM) (*stores, error) {
	// The store is locked while open; wait a little for it, never forever, so a
	// second node started on the same directory says why it cannot start.
	boltOpts := *bbolt.DefaultOptions
	boltOpts.Timeout = storeLockTimeout
	// raft.db now holds the term and the vote, and an older data directory's
	// log until openLog has moved it. Its free list is a map rebuilt at open
	// rather than written with every commit, as it was when it held the log.
	boltOpts.FreelistType = bbolt.FreelistMapType
	boltOpts.NoFreelistSync = true
	dbPath := filepath.Join(cfg.DataDir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: dbPath, NoSync: cfg.NoSync, BoltOptions: &boltOpts})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open raft log store %s: locked by another process (is a node already running on this data directory?): %w", dbPath, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open raft log store: %w", err)
	}
	wlog, err := openLog(cfg.DataDir, cmp.Or(cfg.WALSegmentSize, walSegmentSize), store, cfg.Logger, rc.Logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	// closeStores closes both stores on a failed start.
	closeStores := func() {
		wlog.Close()
		store.Close()
	}
	logs, err := raft.NewLogCache(1024, &failingLog{LogStore: wlog, failed: cfg.OnLogFailure})
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("log cache: %w", err)
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, rc.Logger)
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	removeCutSnapshots(cfg.DataDir, cfg.Logger)
	snaps := newCheckpointSnapshots(files, f, cfg.DataDir, cfg.Logger)
	if err := dropLogBehindSnapshot(wlog, snaps, cfg.Logger); err != nil {
		closeStores()
		return nil, err
	}
	return &stores{store: store, wal: wlog, logs: logs, snaps: snaps, close: closeStores}, nil
}

func openTransport(cfg Config, adv net.Addr, log hclog.Logger) (*raft.NetworkTransport, *tlsStream, error) {
	if cfg.TLS == nil {
		t, err := raft.NewTCPTransportWithLogger(cfg.RaftAddr, adv, 3, 10*time.Second, log)
		return t, nil, err
	}
	stream, err := newTLSStream(cfg.RaftAddr, adv, cfg.TLS, cfg.Logger.With(raftComponentKey, "raft"))
	if err != nil {
		return nil, nil, err
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: log,
	}), stream, nil
}

// storeLockTimeout bounds the wait for the log store's file lock.
const storeLockTimeout = 3 * time.Second

func orDefault(v, d uint64) uint64 {
	if v == 0 {
		return d
	}
	return v
}

// RaftAddr is the address the transport listens on.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }

// IsLeader reports whether this node currently leads.
func (n *Node) IsLeader() bool { return n.Raft.State() == raft.Leader }

// WaitLeader blocks until this node leads and its FSM has applied every entry
// committed before, or until ctx ends. Leadership alone is not enough: a node that
// restarts wins the election before it has replayed its log, and reads served in
// that gap would miss acknowledged writes.
func (n *Node) WaitLeader(ctx context.Context) error {
	return n.wait(ctx, "wait for leadership", func() bool { return false })
}

// wait polls until this node leads and has applied everything committed before
// (a barrier), or until followerReady says a follower may serve.
func (n *Node) wait(ctx context.Context, what string, followerReady func() bool) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if n.IsLeader() {
			err := n.Barrier(ctx)
			if err == nil {
				return nil
			}
			if !errors.Is(err, ErrNotLeader) {
				return fmt.Errorf("%s: %w", what, err)
			}
			// Lost the leadership before catching up: wait again.
		} else if followerReady() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

var _ fsm.Applier = (*Node)(nil)

// Apply proposes cmd, waits until it is applied and returns the FSM's value, or its
// domain refusal as the error (fsm.Do gives the value its command's type). Not
// being the leader is ErrNotLeader; a type some member cannot apply yet is
// ErrNotUnderstood, and nothing is proposed (gate.go).
func (n *Node) Apply(ctx context.Context, cmd fsm.Command) (any, error) {
	if err := n.CheckUnderstood(cmd.Type()); err != nil {
		return nil, err
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return nil, err
	}
	timeout, err := waitBudget(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", cmd.Type(), err)
	}
	// Decoded here, in parallel with other proposals, rather than on the
	// FSM's one goroutine (fsm/predecode.go).
	forget, err := n.FSM.Predecode(data)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", cmd.Type(), err)
	}
	defer forget()
	fut := n.Raft.Apply(data, timeout)
	if err := fut.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, fmt.Errorf("apply %s: %w: %w", cmd.Type(), ErrNotLeader, err)
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return nil, fmt.Errorf("apply %s: %w", cmd.Type(), ErrTimeout)
		}
		return nil, fmt.Errorf("apply %s: %w", cmd.Type(), err)
	}
	res, ok := fut.Response().(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("apply %s: unexpected fsm response %T", cmd.Type(), fut.Response())
	}
	return res.Value, res.Err
}

// DefaultApplyTimeout is how long Apply, Barrier and the membership
// changes wait for Raft to take their proposal when the caller's context
// sets no deadline. The API's handlers pass the request's context as it
// is: a timer and a cancelable context per request only to say these ten
// seconds were 1.4% of a create's CPU in a profile (docs/benchmarks.md,
// fifteenth session).
const DefaultApplyTimeout = 10 * time.Second

// waitBudget is how long a proposal may wait to be taken: until ctx's
// deadline, or DefaultApplyTimeout when it has none. A caller that already
// gave up gets an error and nothing proposed on its behalf (raft reads a
// timeout of zero or less as "wait forever").
func waitBudget(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return DefaultApplyTimeout, nil
	}
	if t := time.Until(dl); t > 0 {
		return t, nil
	}
	return 0, context.DeadlineExceeded
}

// Barrier waits until every entry committed before it is applied, so a read after
// it sees every acknowledged write.
func (n *Node) Barrier(ctx context.Context) error {
	timeout, err := waitBudget(ctx)
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if err := n.Raft.Barrier(timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("barrier: %w: %w", ErrNotLeader, err)
		}
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// Snapshot takes a snapshot now and compacts the log behind it.
func (n *Node) Snapshot() error {
	if err := n.Raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// Stats is Raft's own view of the node (state, term, indexes).
func (n *Node) Stats() map[string]string { return n.Raft.Stats() }

// LogStats is what the Raft log (raft-wal) counted since the node opened
// it: entries and bytes written and read, appends, segments filled,
// entries cut from either end (wal.MetricDefinitions names them), and the
// age of the last segment when it filled.
func (n *Node) LogStats() walmetrics.Summary { return n.wal.stats.Summary() }

// Close shuts Raft down and closes the stores.
func (n *Node) Close() error {
	err := n.Raft.Shutdown().Error()
	if cerr := n.transport.Close(); err == nil {
		err = cerr
	}
	if cerr := n.FSM.Close(); err == nil {
		err = cerr
	}
	if cerr := n.wal.Close(); err == nil {
		err = cerr
	}
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// resumeFrom lets the FSM start from its state file instead of the last
// snapshot when the file is at least as new: Raft then replays only the log
// after the snapshot, and the FSM skips what the file already holds. A file
// without Raft state beside it (a wiped Raft directory) is emptied, since the
// log this node will receive starts again from the beginning.
func resumeFrom(rc *raft.Config, f *fsm.FSM, existing bool, snaps raft.SnapshotStore, log *slog.Logger) error {
	cp := f.CheckpointIndex()
	if cp == 0 {
		return nil
	}
	if !existing {
		log.Warn("state file has no raft state beside it; starting empty", "checkpoint_index", cp)
		if err := f.Reset(); err != nil {
			return fmt.Errorf("empty state file: %w", err)
		}
		return nil
	}
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	var latest uint64
	if len(metas) > 0 {
		latest = metas[0].Index
	}
	if cp >= latest {
		rc.NoSnapshotRestoreOnStart = true
		log.Info("resuming from state file", "checkpoint_index", cp, "snapshot_index", latest)
		return nil
	}
	log.Info("state file older than the last snapshot; restoring the snapshot", "checkpoint_index", cp, "snapshot_index", latest)
	return nil
}
