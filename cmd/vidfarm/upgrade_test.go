package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// oldLevel is the level of the "old" build: it hides ResealWebhook (50) and
// SweepIntermediates (51), as a release from before them would.
const oldLevel = fsm.ExpireSpeechType

var (
	oldBinOnce sync.Once
	oldBinPath string
	oldBinErr  error
)

// oldVidfarmBinary builds the binary with every command type above oldLevel
// hidden (fsm.hideAbove), beside vidfarmBinary's so TestMain removes it.
func oldVidfarmBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(vidfarmBinary(t))
	oldBinOnce.Do(func() {
		oldBinPath = filepath.Join(dir, "vidfarm-old")
		flags := fmt.Sprintf("-X github.com/vidfarm/vidfarm/controlplane/fsm.hideAbove=%d", oldLevel)
		out, err := exec.Command("go", "build", "-ldflags", flags, "-o", oldBinPath, ".").CombinedOutput()
		if err != nil {
			oldBinErr = fmt.Errorf("go build %s: %v\n%s", flags, err, out)
		}
	})
	if oldBinErr != nil {
		t.Fatal(oldBinErr)
	}
	return oldBinPath
}

// upgradeNode is one member of the cluster under upgrade: fixed ports, its
// data directory, and the build it runs now.
type upgradeNode struct {
	id, dir                    string
	public, admin, agent, raft int
	p                          *proc // nil while stopped
	level                      fsm.MessageType
	joined                     bool
}

func (n *upgradeNode) adminClient() *admin.Client {
	return &admin.Client{Server: "http://127.0.0.1:" + strconv.Itoa(n.admin), Token: e2eAdminToken}
}

type upgradeCluster struct {
	t        *testing.T
	nodes    []*upgradeNode
	old, new string // the two builds
	// procs is every process the test started, stopped ones too, so the
	// end can check that none panicked.
	procs []*proc
}

// upgradeSecretsKey is given to the new build only: the operator sets a
// key with the upgrade, so a new leader wants to seal the secret the old
// cluster stored plain (ResealWebhook, which the old build cannot apply).
const upgradeSecretsKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// start runs node i on build bin, joining through node 0 the first time.
func (c *upgradeCluster) start(i int, bin string) {
	c.t.Helper()
	n := c.nodes[i]
	n.level, n.p = fsm.Understood(), nil
	label := "new"
	if bin == c.old {
		n.level, label = oldLevel, "old"
	}
	args := []string{"server", "--node-id", n.id, "--data-dir", n.dir,
		"--listen", fmt.Sprintf("127.0.0.1:%d", n.public), "--admin-listen", fmt.Sprintf("127.0.0.1:%d", n.admin),
		"--agent-listen", fmt.Sprintf("127.0.0.1:%d", n.agent), "--raft-listen", fmt.Sprintf("127.0.0.1:%d", n.raft),
		"--admin-token", e2eAdminToken, "--agent-token", e2eAgentToken, "--rate-limits=false",
		"--blob-secret", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"--allow-private-urls", "--dev-allow-private-webhooks", "--log-level", "info"}
	if bin == c.new {
		args = append(args, "--secrets-key", upgradeSecretsKey)
	}
	if i > 0 && !n.joined {
		args = append(args, "--join", c.nodes[0].adminClient().Server)
	}
	p, ready := startProcBin(c.t, bin, fmt.Sprintf("server %s (%s)", n.id, label), args, nil, "control plane ready")
	if got := ready["understands"]; got != float64(n.level) {
		c.t.Fatalf("%s (%s build) says it understands up to %v, want %d", n.id, label, got, n.level)
	}
	p.public = fmt.Sprintf("http://127.0.0.1:%d", n.public)
	p.admin = n.adminClient()
	n.p, n.joined = p, true
	c.procs = append(c.procs, p)
}

// stop ends node i with SIGTERM and expects a clean exit.
func (c *upgradeCluster) stop(i int) {
	c.t.Helper()
	c.nodes[i].p.terminate()
	c.nodes[i].p = nil
}

func (c *upgradeCluster) up() []*upgradeNode {
	var out []*upgradeNode
	for _, n := range c.nodes {
		if n.p != nil {
			out = append(out, n)
		}
	}
	return out
}

// members asks n for the cluster as it sees it.
func (c *upgradeCluster) members(n *upgradeNode) (admin.ClusterMembers, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return n.adminClient().ClusterMembers(ctx)
}

// waitLeader polls until the running nodes agree on a leader among them.
func (c *upgradeCluster) waitLeader() int {
	c.t.Helper()
	leader := -1
	eventually(c.t, 30*time.Second, "the running nodes to agree on a leader among them", func() bool {
		leader = -1
		for _, n := range c.up() {
			m, err := c.members(n)
			i := slices.IndexFunc(c.nodes, func(x *upgradeNode) bool { return x.id == m.Leader })
			if err != nil || i < 0 || c.nodes[i].p == nil || (leader >= 0 && i != leader) {
				return false
			}
			leader = i
		}
		return leader >= 0
	})
	return leader
}

// waitLevels polls until the leader lists every node as a voter with the
// level its build has, and every running node has applied the same log.
func (c *upgradeCluster) waitLevels() {
	c.t.Helper()
	eventually(c.t, 30*time.Second, "every member's level recorded and one log applied everywhere", func() bool {
		m, err := c.members(c.nodes[c.waitLeader()])
		if err != nil || len(m.Members) != len(c.nodes) {
			return false
		}
		for _, mm := range m.Members {
			i := slices.IndexFunc(c.nodes, func(x *upgradeNode) bool { return x.id == mm.ID })
			if i < 0 || mm.Suffrage != "Voter" || fsm.MessageType(mm.Understands) != c.nodes[i].level {
				return false
			}
		}
		applied := map[uint64]bool{}
		for _, n := range c.up() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var st admin.ClusterStatus
			raw, err := n.adminClient().ClusterStatus(ctx)
			cancel()
			if err != nil || json.Unmarshal(raw, &st) != nil || fsm.MessageType(st.Understands) != n.level {
				return false
			}
			applied[st.AppliedIndex] = true
		}
		return len(applied) == 1
	})
}

// applied is how many commands of type typ node n applied since it started
// (its vidfarm_fsm_apply_seconds histogram).
func (c *upgradeCluster) applied(n *upgradeNode, typ fsm.MessageType) int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := n.adminClient().Do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		c.t.Fatalf("metrics of %s: %v", n.id, err)
	}
	prefix := fmt.Sprintf(`vidfarm_fsm_apply_seconds_count{type=%q} `, typ.String())
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return 0
}

// alive fails the test if a running node's process has exited.
func (c *upgradeCluster) alive() {
	c.t.Helper()
	for _, n := range c.up() {
		select {
		case err := <-n.p.exited:
			c.t.Fatalf("%s exited (%v):\n%s", n.id, err, tail(n.p.stderr.String(), 40))
		default:
		}
	}
}

// retry repeats a request while it answers a retryable 503 (a leadership
// change, a forward during an election), as a client would.
func retry[T any](t *testing.T, what string, do func() (T, error)) T {
	t.Helper()
	var v T
	var err error
	eventually(t, 30*time.Second, what, func() bool {
		v, err = do()
		var e *apierr.Error
		if errors.As(err, &e) && e.Status == http.StatusServiceUnavailable {
			return false
		}
		return true
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// createVideo creates a video through node n, retrying retryable answers
// with the same Idempotency-Key.
func createVideo(t *testing.T, n *upgradeNode, key, prompt string) string {
	t.Helper()
	var r reply
	eventually(t, 30*time.Second, "a create through "+n.id, func() bool {
		r = n.p.call(http.MethodPost, "/v1/videos", key, manualBody(prompt, ""), "Idempotency-Key", prompt)
		return r.status != http.StatusServiceUnavailable
	})
	if r.status != http.StatusCreated {
		t.Fatalf("create through %s: %d %s", n.id, r.status, r.body)
	}
	return r.obj(t)["id"].(string)
}

// TestRollingUpgrade takes a three-node cluster of the old build (it
// hides every command type above 49, as the release before ResealWebhook
// would) through a rolling upgrade to this build: one node at a time is
// stopped and started again on its own data directory with the new
// binary, followers first and the leader last. The new nodes run with
// --secrets-key, so a new leader wants to seal the webhook secret the old
// cluster stored plain, a ResealWebhook (type 50) the old build would
// panic on. While an old member remains that command is never proposed
// (the new leader logs the skipped job, naming the member), every node
// keeps running and the cluster takes writes; the last old node even
// restarts once more on the old build under the new leader, and would
// panic replaying the log if the reseal had gone in. As soon as the last
// member is upgraded the reseal is proposed and applied on every node.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice and runs three servers")
	}
	c := &upgradeCluster{t: t, old: oldVidfarmBinary(t), new: vidfarmBinary(t)}
	dir := t.TempDir()
	for i := range 3 {
		n := &upgradeNode{id: fmt.Sprintf("n%d", i+1), public: freePort(t), admin: freePort(t), agent: freePort(t), raft: freePort(t)}
		n.dir = filepath.Join(dir, n.id)
		c.nodes = append(c.nodes, n)
	}
	began := time.Now()
	for i := range c.nodes {
		c.start(i, c.old)
		if i == 0 {
			c.waitLeader()
		}
	}
	c.waitLevels()
	t.Logf("three old nodes up in %v", time.Since(began).Round(time.Millisecond))

	// Work on the old cluster, through every node.
	ctx := context.Background()
	acct := retry(t, "an account through n2", func() (admin.CreatedAccount, error) {
		return c.nodes[1].adminClient().CreateAccount(ctx, "upgrade", "pro", 1000)
	})
	var videos []string
	for _, n := range c.nodes {
		videos = append(videos, createVideo(t, n, acct.APIKey, "before the upgrade, through "+n.id))
	}
	hook := c.nodes[2].p.must(http.StatusCreated, http.MethodPost, "/v1/webhooks", acct.APIKey, `{"url":"http://127.0.0.1:1/hooks"}`).obj(t)
	if hook["secret"] == "" {
		t.Fatalf("webhook %v", hook)
	}

	const skipped = "leader job skipped: a member does not understand its command yet"
	upgraded := 0
	leaderUpgraded := false
	for upgraded < len(c.nodes) {
		leader := c.waitLeader()
		// The next old node: a follower while there is one, the leader last.
		i := -1
		for j, n := range c.nodes {
			if n.level == oldLevel && (i < 0 || i == leader) {
				i = j
			}
		}
		n := c.nodes[i]
		last := upgraded == len(c.nodes)-1
		leaderUpgraded = leaderUpgraded || i == leader
		t.Logf("%v: upgrading %s (leader: %v)", time.Since(began).Round(time.Millisecond), n.id, i == leader)
		c.stop(i)
		if last {
			// Every running node is new; the stopped one is still a member
			// at the old level. A new leader wants to reseal and may not.
			l := c.nodes[c.waitLeader()]
			eventually(t, 30*time.Second, "the new leader to skip the reseal, naming "+n.id, func() bool {
				for _, line := range findLogs(l.p, skipped, "job", "reseal_secrets", "command", "reseal_webhook") {
					if strings.Contains(fmt.Sprint(line["members"]), n.id) {
						return true
					}
				}
				return false
			})
		}
		if last {
			// The old node comes back on the old build first (a reboot
			// before its turn): it catches up on a log a new leader wrote,
			// which holds no command it cannot apply, and serves.
			c.start(i, c.old)
			c.waitLevels()
			videos = append(videos, createVideo(t, n, acct.APIKey, "old node under a new leader, through "+n.id))
			c.alive()
			for _, m := range c.up() {
				if got := c.applied(m, fsm.ResealWebhookType); got != 0 {
					t.Fatalf("%s applied %d reseal_webhook while %s is old", m.id, got, n.id)
				}
			}
			c.stop(i)
		}
		c.start(i, c.new)
		upgraded++
		if !last {
			c.waitLevels()
			// A mixed cluster takes writes through the upgraded node.
			videos = append(videos, createVideo(t, n, acct.APIKey, "mid-upgrade, through "+n.id))
		}
		c.alive()
		for _, m := range c.up() {
			if got := c.applied(m, fsm.ResealWebhookType); got != 0 && !last {
				t.Fatalf("%s applied %d reseal_webhook while an old member remains", m.id, got)
			}
		}
	}
	if !leaderUpgraded {
		// Raft chose the leader; with pre-vote it does not move without a
		// fault, so this is rare, and the checks below hold either way.
		t.Logf("the leader moved to an upgraded node before its turn: no node was upgraded while it led")
	}

	// Every member new: the reseal is proposed at once and applied everywhere.
	c.waitLevels()
	for _, n := range c.nodes {
		eventually(t, 30*time.Second, n.id+" to apply the reseal", func() bool { return c.applied(n, fsm.ResealWebhookType) == 1 })
	}
	resealed := 0
	for _, n := range c.up() {
		resealed += len(findLogs(n.p, "sealed webhook signing secrets with the current secrets key", "count", "1"))
	}
	if resealed != 1 {
		t.Errorf("%d leaders logged the reseal, want one", resealed)
	}
	c.alive()
	c.waitLevels()
	for _, n := range c.nodes {
		r := n.p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=100", acct.APIKey, "")
		for _, id := range videos {
			if !strings.Contains(string(r.body), id) {
				t.Fatalf("%s does not list %s after the upgrade: %s", n.id, id, r.body)
			}
		}
	}
	for _, p := range c.procs {
		if s := p.stderr.String(); strings.Contains(s, "panic") {
			t.Fatalf("a node panicked:\n%s", tail(s, 40))
		}
	}
	t.Logf("rolling upgrade of three nodes done in %v", time.Since(began).Round(time.Millisecond))
}
