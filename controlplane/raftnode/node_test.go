package raftnode_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/scheduler"
)

const t0 int64 = 1_700_000_000 * 1e9

// open starts a node on dir (a fresh FSM) and waits until it leads.
func open(t *testing.T, dir string, tweak ...func(*raftnode.Config)) *raftnode.Node {
	t.Helper()
	cfg := raftnode.Config{DataDir: dir, NodeID: "node1", RaftAddr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		// A single node leads itself when its heartbeat timer fires: short
		// timeouts keep the tests quick and cannot depose anyone.
		Timing: raftnode.Timing{Heartbeat: 100 * time.Millisecond, Election: 100 * time.Millisecond, LeaderLease: 100 * time.Millisecond}}
	for _, f := range tweak {
		f(&cfg)
	}
	// The state file, as a server keeps it.
	f, err := fsm.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatalf("open state file: %v", err)
	}
	n, err := raftnode.Open(cfg, f)
	if err != nil {
		f.Close()
		t.Fatalf("open: %v", err)
	}
	if cfg.Join {
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	return n
}

func closeNode(t *testing.T, n *raftnode.Node) {
	t.Helper()
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func apply[R any](t *testing.T, n *raftnode.Node, c fsm.Typed[R]) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := fsm.Do(ctx, n, c)
	if err != nil {
		t.Fatalf("apply %s: %v", c.Type(), err)
	}
	return v
}

func barrier(t *testing.T, n *raftnode.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Barrier(ctx); err != nil {
		t.Fatalf("barrier: %v", err)
	}
}

func account(id string, credits int64) *fsm.CreateAccount {
	return &fsm.CreateAccount{AccountID: id, Name: id, Plan: fsm.PlanPro, Credits: credits,
		KeyID: id + "-key", KeyHash: [32]byte{byte(len(id)), id[len(id)-1]}, Now: t0}
}

func video(id, acct string, price int64, idem string) *fsm.CreateVideo {
	return &fsm.CreateVideo{VideoID: id, AccountID: acct, Price: price, IdempotencyKey: idem, BodyHash: [32]byte{1},
		Spec: fsm.Spec{Mode: fsm.ModeAuto, Prompt: "p", DurationSeconds: 5}, Now: t0}
}

func TestBootstrapLeadAndApply(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir)
	defer closeNode(t, n)

	if !n.IsLeader() || n.RaftAddr() == "" || n.Stats()["state"] != "Leader" {
		t.Fatalf("leader %v addr %q stats %v", n.IsLeader(), n.RaftAddr(), n.Stats()["state"])
	}
	if a := apply(t, n, account("acct", 10)); a.ID != "acct" || a.Credits != 10 {
		t.Fatalf("apply answered %#v", a)
	}
	res := apply(t, n, video("v1", "acct", 4, ""))
	if res.Video.CreditsCharged != 4 || res.QueuePosition != 1 {
		t.Fatalf("create answered %+v", res)
	}
	// A domain refusal comes back as the FSM's error value, unwrapped.
	ctx := context.Background()
	_, err := n.Apply(ctx, video("v2", "acct", 7, ""))
	var ins *fsm.InsufficientCreditsError
	if !errors.As(err, &ins) || ins.Required != 7 || ins.Remaining != 6 {
		t.Fatalf("refusal %v", err)
	}
	if _, err := n.Apply(ctx, &fsm.GrantCredits{AccountID: "nobody", Amount: 1}); !errors.Is(err, fsm.ErrAccountNotFound) {
		t.Fatalf("refusal %v", err)
	}
	barrier(t, n)
	if a, _ := n.FSM.Account("acct"); a.Credits != 6 {
		t.Fatalf("balance %d", a.Credits)
	}
	for _, p := range []string{"raft.db", "wal", "snapshots"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("data dir lacks %s: %v", p, err)
		}
	}
}

func TestApplyWithDoneContextProposesNothing(t *testing.T) {
	n := open(t, t.TempDir())
	defer closeNode(t, n)
	apply(t, n, account("acct", 10))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.Apply(ctx, video("v1", "acct", 4, "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("apply with a cancelled context: %v", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := n.Apply(ctx, video("v2", "acct", 4, "")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("apply past its deadline: %v", err)
	}
	barrier(t, n)
	if a, _ := n.FSM.Account("acct"); a.Credits != 10 || n.FSM.Stats().Videos != 0 {
		t.Fatalf("a request that gave up was applied: balance %d, videos %d", a.Credits, n.FSM.Stats().Videos)
	}
}

func TestConcurrentApplies(t *testing.T) {
	n := open(t, t.TempDir())
	defer closeNode(t, n)
	apply(t, n, account("acct", 50))
	const workers = 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := n.Apply(context.Background(), video("v"+strconv.Itoa(i), "acct", 1, ""))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok, short := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, fsm.ErrInsufficientCredits):
			short++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if a, _ := n.FSM.Account("acct"); ok != 50 || short != 50 || a.Credits != 0 {
		t.Fatalf("%d created, %d refused, balance %d; want 50, 50, 0", ok, short, a.Credits)
	}
}

// state is what the reopen tests compare.
type state struct {
	balances map[string]int64
	videos   map[string]string // id -> status
	revoked  map[string]bool
	stats    fsm.Stats
}

func read(t *testing.T, n *raftnode.Node, accounts, videos, keys []string) state {
	t.Helper()
	s := state{balances: map[string]int64{}, videos: map[string]string{}, revoked: map[string]bool{}, stats: n.FSM.Stats()}
	for _, a := range accounts {
		acct, ok := n.FSM.Account(a)
		if !ok {
			t.Fatalf("account %s missing", a)
		}
		s.balances[a] = acct.Credits
	}
	for _, v := range videos {
		qv, ok := n.FSM.Video("", v)
		if !ok {
			t.Fatalf("video %s missing", v)
		}
		s.videos[v] = qv.Status
	}
	for _, k := range keys {
		key, ok := n.FSM.Key(k)
		if !ok {
			t.Fatalf("key %s missing", k)
		}
		s.revoked[k] = key.RevokedAt != 0
	}
	return s
}

func equalState(a, b state) bool {
	if len(a.balances) != len(b.balances) || len(a.videos) != len(b.videos) || len(a.revoked) != len(b.revoked) {
		return false
	}
	for k, v := range a.balances {
		if b.balances[k] != v {
			return false
		}
	}
	for k, v := range a.videos {
		if b.videos[k] != v {
			return false
		}
	}
	for k, v := range a.revoked {
		if b.revoked[k] != v {
			return false
		}
	}
	return a.stats.Accounts == b.stats.Accounts && a.stats.Videos == b.stats.Videos && a.stats.Queued == b.stats.Queued &&
		a.stats.Nodes == b.stats.Nodes &&
		a.stats.Keys == b.stats.Keys && a.stats.Idempotency == b.stats.Idempotency
}

// replay asks the node for the idempotent replay of "idem-1" on acct "a".
func replay(t *testing.T, n *raftnode.Node) fsm.CreateVideoResult {
	t.Helper()
	res := apply(t, n, video("v-retry", "a", 2, "idem-1"))
	if !res.Replayed {
		t.Fatalf("idempotency record lost: the retry created %s", res.Video.ID)
	}
	return res
}

func TestReopenReplaysTheLog(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir)
	apply(t, n, account("a", 100))
	apply(t, n, account("b", 5))
	apply(t, n, video("v1", "a", 7, "idem-1"))
	apply(t, n, video("v2", "a", 3, ""))
	apply(t, n, &fsm.FailVideo{VideoID: "v2", Reason: "x", Now: t0})
	apply(t, n, &fsm.RevokeKey{KeyID: "b-key", Now: t0})
	accounts, videos, keys := []string{"a", "b"}, []string{"v1", "v2"}, []string{"a-key", "b-key"}
	before := read(t, n, accounts, videos, keys)
	first := replay(t, n)
	closeNode(t, n)

	n = open(t, dir)
	defer closeNode(t, n)
	barrier(t, n) // every committed entry is applied again
	after := read(t, n, accounts, videos, keys)
	if !equalState(before, after) {
		t.Fatalf("state after reopen\n%+v\nwant\n%+v", after, before)
	}
	if again := replay(t, n); again.Video.ID != first.Video.ID || again.Video.Status != fsm.StatusQueued || again.QueuePosition != first.QueuePosition {
		t.Fatalf("replay after reopen %+v, want %+v", again, first)
	}
	if after.balances["a"] != 93 || after.videos["v2"] != fsm.StatusFailed || !after.revoked["b-key"] || after.revoked["a-key"] {
		t.Fatalf("unexpected state %+v", after)
	}
}

func TestReopenRestoresSnapshotThenReplays(t *testing.T) {
	dir := t.TempDir()
	// Keep almost no log behind a snapshot, so reopening must read the snapshot.
	small := func(c *raftnode.Config) { c.TrailingLogs, c.WALSegmentSize = 1, 512 }
	n := open(t, dir, small)
	apply(t, n, account("a", 100))
	apply(t, n, account("b", 5))
	apply(t, n, video("v1", "a", 7, "idem-1"))
	apply(t, n, video("v2", "a", 3, ""))
	apply(t, n, &fsm.RevokeKey{KeyID: "b-key", Now: t0})
	if err := n.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	snapIndex, _ := strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
	if snapIndex == 0 {
		t.Fatalf("no snapshot recorded: %v", n.Stats())
	}
	// Changes after the snapshot live only in the log.
	apply(t, n, account("c", 1))
	// The farm's state lives in the log too: a node takes v1's first task.
	apply(t, n, &fsm.RegisterNode{NodeID: "n1", Name: "n1", CredHash: [32]byte{9}, Node: scheduler.Node{CPUSlots: 1}, Now: t0})
	if l := apply(t, n, &fsm.LeaseTask{NodeID: "n1", LeaseMS: 3_600_000, Now: t0}); !l.Found || l.Lease.VideoID != "v1" {
		t.Fatalf("lease %+v", l)
	}
	apply(t, n, &fsm.FailVideo{VideoID: "v2", Reason: "x", Now: t0})
	apply(t, n, &fsm.GrantCredits{AccountID: "b", Amount: 10, Now: t0})
	apply(t, n, video("v3", "b", 15, ""))
	accounts, videos, keys := []string{"a", "b", "c"}, []string{"v1", "v2", "v3"}, []string{"a-key", "b-key", "c-key"}
	before := read(t, n, accounts, videos, keys)
	taskBefore, _ := n.FSM.Task("v1/plan")
	nodesBefore := n.FSM.Nodes()
	first := replay(t, n)
	closeNode(t, n)

	// The log was compacted behind the snapshot: the first entries are gone.
	firstIndex, err := walFirstIndex(t, dir)
	if err != nil || firstIndex <= 1 || firstIndex > snapIndex {
		t.Fatalf("log starts at %d (err %v) with a snapshot at %d: not compacted", firstIndex, err, snapIndex)
	}

	n = open(t, dir, small)
	defer closeNode(t, n)
	barrier(t, n)
	after := read(t, n, accounts, videos, keys)
	if !equalState(before, after) {
		t.Fatalf("state after reopen\n%+v\nwant\n%+v", after, before)
	}
	if again := replay(t, n); again.Video.ID != first.Video.ID || again.QueuePosition != first.QueuePosition {
		t.Fatalf("replay after reopen %+v, want %+v", again, first)
	}
	if task, _ := n.FSM.Task("v1/plan"); task.Lease == nil || !reflect.DeepEqual(task, taskBefore) {
		t.Fatalf("leased task after reopen\n%+v\nwant\n%+v", task, taskBefore)
	}
	if nodes := n.FSM.Nodes(); !reflect.DeepEqual(nodes, nodesBefore) {
		t.Fatalf("nodes after reopen\n%+v\nwant\n%+v", nodes, nodesBefore)
	}
	if after.balances["b"] != 0 || after.videos["v3"] != fsm.StatusQueued || after.videos["v1"] != fsm.StatusProcessing ||
		after.stats.Queued != 1 || after.stats.Nodes != 1 {
		t.Fatalf("unexpected state %+v", after)
	}
	// A second snapshot and reopen, with nothing after it, also comes back.
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	closeNode(t, n)
	n = open(t, dir, small)
	barrier(t, n)
	if again := read(t, n, accounts, videos, keys); !equalState(before, again) {
		t.Fatalf("state after the second reopen\n%+v\nwant\n%+v", again, before)
	}
}

func TestNotLeader(t *testing.T) {
	n := open(t, t.TempDir())
	defer closeNode(t, n)
	apply(t, n, account("a", 10))
	// Add a voter that never answers: the node cannot keep a quorum and steps down.
	go n.Raft.AddVoter("ghost", "127.0.0.1:1", 0, 5*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for n.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("node kept leading without a quorum")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.Apply(ctx, &fsm.GrantCredits{AccountID: "a", Amount: 1, Now: t0}); !errors.Is(err, raftnode.ErrNotLeader) {
		t.Fatalf("apply on a follower: %v, want ErrNotLeader", err)
	}
	if err := n.Barrier(ctx); !errors.Is(err, raftnode.ErrNotLeader) {
		t.Fatalf("barrier on a follower: %v, want ErrNotLeader", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if err := n.WaitLeader(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitLeader without a quorum: %v, want the context's deadline", err)
	}
}

func TestOpenRefusesBadConfig(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := raftnode.Open(raftnode.Config{DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0", Logger: log}, fsm.New()); err == nil {
		t.Fatal("opened without a node id")
	}
	if _, err := raftnode.Open(raftnode.Config{DataDir: t.TempDir(), NodeID: "n", RaftAddr: "127.0.0.1:0", Advertise: "not an address", Logger: log}, fsm.New()); err == nil {
		t.Fatal("opened with a bad advertise address")
	}
	// Two nodes cannot share a data directory: the second is refused, not hung.
	dir := t.TempDir()
	n := open(t, dir)
	defer closeNode(t, n)
	done := make(chan error, 1)
	go func() {
		second, err := raftnode.Open(raftnode.Config{DataDir: dir, NodeID: "node1", RaftAddr: "127.0.0.1:0", Logger: log}, fsm.New())
		if err == nil {
			second.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "another process") {
			t.Fatalf("second node on the same data directory: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a second node on the same data directory hangs instead of failing")
	}
}

func TestWaitLeaderMeansCaughtUp(t *testing.T) {
	dir := t.TempDir()
	n := open(t, dir, func(c *raftnode.Config) { c.NoSync = true })
	apply(t, n, account("a", 0))
	const grants = 10000
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range grants / 50 {
				if _, err := n.Apply(context.Background(), &fsm.GrantCredits{AccountID: "a", Amount: 1, Now: t0}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	closeNode(t, n)

	// No barrier here: a node that says it leads must already serve every
	// acknowledged write, or the API answers from a state that lost some.
	n = open(t, dir)
	defer closeNode(t, n)
	if a, ok := n.FSM.Account("a"); !ok || a.Credits != grants {
		t.Fatalf("right after WaitLeader the FSM holds %d credits (found %v), want %d", a.Credits, ok, grants)
	}
}

// walFirstIndex reads the first index of the log in the closed node's data
// directory dir.
func walFirstIndex(t *testing.T, dir string) (uint64, error) {
	w := openTestWAL(t, dir)
	defer w.Close()
	return w.FirstIndex()
}
