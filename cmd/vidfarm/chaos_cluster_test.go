package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/blob/s3test"
)

// A chaosCluster is three (or more) `vidfarm server` processes on loopback
// sharing an S3 bucket and a blob secret: the first bootstraps, the others
// join it. Every node keeps its ports across restarts, because the cluster
// knows a member by its Raft address and the FSM by its published URLs.

// chaosNode is one member: its data directory, fixed ports and process.
type chaosNode struct {
	id  string
	dir string
	// public, admin, agent and raft are the ports it listens on; advertise is
	// the Raft address the others dial (the partition test's proxy), empty
	// for the listener itself.
	public, admin, agent, raft int
	advertise                  string
	p                          *proc // nil while the node is down
	// pid is p's process id (0 while down), for the proxies' goroutines.
	pid    atomic.Int64
	joined bool
}

func (n *chaosNode) publicURL() string { return "http://127.0.0.1:" + strconv.Itoa(n.public) }
func (n *chaosNode) adminURL() string  { return "http://127.0.0.1:" + strconv.Itoa(n.admin) }
func (n *chaosNode) agentURL() string  { return "http://127.0.0.1:" + strconv.Itoa(n.agent) }
func (n *chaosNode) adminClient() *admin.Client {
	return &admin.Client{Server: n.adminURL(), Token: e2eAdminToken}
}

type chaosCluster struct {
	t     *testing.T
	dir   string
	s3    blob.S3Config
	nodes []*chaosNode
	// extra, when set, gives node i's further flags (the partition test's
	// published URLs).
	extra func(i int) []string
}

// freePort is a loopback port nobody listened on a moment ago, picked
// below the kernel's ephemeral range (32768–60999 on Linux): a port from
// 127.0.0.1:0 is free when picked but may go to another process's
// ephemeral bind (parallel test packages make many) before the server
// binds it, while one below that range is only ever taken on purpose.
// A port is handed out once per test process, since one handed out is
// not bound until its server starts.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if portsGiven[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: try another
		}
		ln.Close()
		portsGiven[port] = true
		return port
	}
	t.Fatal("no free loopback port in 20000–31999")
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// newChaosCluster picks ports for n nodes without starting them.
func newChaosCluster(t *testing.T, n int) *chaosCluster {
	t.Helper()
	requireE2E(t)
	c := &chaosCluster{t: t, dir: t.TempDir(), s3: s3test.Start(t, "chaos")}
	for i := range n {
		nd := &chaosNode{id: fmt.Sprintf("n%d", i+1), public: freePort(t), admin: freePort(t), agent: freePort(t), raft: freePort(t)}
		nd.dir = filepath.Join(c.dir, nd.id)
		c.nodes = append(c.nodes, nd)
	}
	return c
}

// startAll starts the first node, waits for it to lead, then joins the rest.
func (c *chaosCluster) startAll() {
	c.t.Helper()
	for i := range c.nodes {
		c.start(i)
		if i == 0 {
			c.waitLeader(30*time.Second, c.nodes[0])
		}
	}
	c.waitMembers(len(c.nodes))
}

// start runs node i; a node that never joined joins through node 0 (the
// first node bootstraps), a restarted one comes back on its data directory.
func (c *chaosCluster) start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	args := c.serverArgs(i)
	if i > 0 && !n.joined {
		args = append(args, "--join", c.nodes[0].adminURL())
	}
	n.p, _ = startProc(c.t, "server "+n.id, args, nil, "control plane ready")
	n.pid.Store(int64(n.p.cmd.Process.Pid))
	n.joined = true
}

// serverArgs are node i's `vidfarm server` arguments, but --join.
func (c *chaosCluster) serverArgs(i int) []string {
	n := c.nodes[i]
	args := []string{"server", "--node-id", n.id, "--data-dir", n.dir,
		"--listen", fmt.Sprintf("127.0.0.1:%d", n.public), "--admin-listen", fmt.Sprintf("127.0.0.1:%d", n.admin),
		"--agent-listen", fmt.Sprintf("127.0.0.1:%d", n.agent), "--raft-listen", fmt.Sprintf("127.0.0.1:%d", n.raft),
		"--admin-token", e2eAdminToken, "--agent-token", e2eAgentToken, "--blob-secret", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"--blob-s3-endpoint", c.s3.Endpoint, "--blob-s3-bucket", c.s3.Bucket, "--blob-s3-region", c.s3.Region,
		"--blob-s3-access-key", c.s3.AccessKey, "--blob-s3-secret-key", c.s3.SecretKey, "--blob-s3-insecure",
		"--rate-limits=false", "--allow-private-urls", "--dev-allow-private-webhooks",
		"--lease-duration", e2eLease.String(), "--heartbeat-interval", e2eHeartbeat.String(), "--log-level", "info",
		"--retry-backoff", "200ms"} // as the e2e farm: failures under chaos must not stall the run
	if n.advertise != "" {
		args = append(args, "--raft-advertise", n.advertise)
	}
	if c.extra != nil {
		args = append(args, c.extra(i)...)
	}
	return args
}

// kill SIGKILLs node i.
func (c *chaosCluster) kill(i int) {
	c.t.Helper()
	c.nodes[i].pid.Store(0)
	c.nodes[i].p.kill()
	c.nodes[i].p = nil
}

// up is the nodes that are running.
func (c *chaosCluster) up() []*chaosNode {
	var out []*chaosNode
	for _, n := range c.nodes {
		if n.p != nil {
			out = append(out, n)
		}
	}
	return out
}

// index is the position of the node with id, or -1.
func (c *chaosCluster) index(id string) int {
	for i, n := range c.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

// members asks node n who the members and the leader are, within a second.
func (c *chaosCluster) members(n *chaosNode) (admin.ClusterMembers, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return n.adminClient().ClusterMembers(ctx)
}

// waitLeader polls until every node of among agrees on one leader that is
// among them, and returns its index.
func (c *chaosCluster) waitLeader(timeout time.Duration, among ...*chaosNode) int {
	c.t.Helper()
	leader := -1
	eventually(c.t, timeout, "the nodes to agree on a leader among them", func() bool {
		leader = -1
		for _, n := range among {
			m, err := c.members(n)
			if err != nil || m.Leader == "" {
				return false
			}
			i := c.index(m.Leader)
			if i < 0 || (leader >= 0 && i != leader) {
				return false
			}
			leader = i
		}
		for _, n := range among {
			if n == c.nodes[leader] {
				return true
			}
		}
		return false
	})
	return leader
}

// waitMembers polls until the leader lists want voters.
func (c *chaosCluster) waitMembers(want int) {
	c.t.Helper()
	eventually(c.t, 60*time.Second, fmt.Sprintf("%d voters", want), func() bool {
		for _, n := range c.up() {
			if m, err := c.members(n); err == nil && m.Leader == n.id {
				return len(m.Members) == want
			}
		}
		return false
	})
}

// status is node n's own view of its Raft log.
func (c *chaosCluster) status(n *chaosNode) (admin.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var st admin.ClusterStatus
	raw, err := n.adminClient().ClusterStatus(ctx)
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	return st, err
}

// waitSameApplied polls until every running node reports the same applied
// index twice in a row: one state everywhere (the FSM is deterministic). It
// returns the index.
func (c *chaosCluster) waitSameApplied(timeout time.Duration) uint64 {
	c.t.Helper()
	var applied, last uint64
	eventually(c.t, timeout, "every node to have applied the same log", func() bool {
		seen := map[uint64]bool{}
		for _, n := range c.up() {
			st, err := c.status(n)
			if err != nil {
				return false
			}
			seen[st.AppliedIndex] = true
			applied = st.AppliedIndex
		}
		same := len(seen) == 1 && applied == last
		last = applied
		return same
	})
	return applied
}
