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

// The rolling-upgrade tests take a three-node cluster of an older build
// through an upgrade to this one, one node at a time on its own data
// directory (upgradeCluster.run), and check that while an older member
// remains the leader never proposes a command it cannot apply.

// hiddenLevel is the level of the build that hides ResealWebhook (50) and
// everything after it, as a release from before them would.
const hiddenLevel = fsm.ExpireSpeechType

var (
	hiddenBinOnce sync.Once
	hiddenBinPath string
	hiddenBinErr  error
)

// hiddenVidfarmBinary builds this binary with every command type above
// hiddenLevel hidden (fsm.hideAbove), beside vidfarmBinary's so TestMain
// removes it. Only the link differs: the packages come from the build cache.
func hiddenVidfarmBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(vidfarmBinary(t))
	hiddenBinOnce.Do(func() {
		hiddenBinPath = filepath.Join(dir, "vidfarm-hidden")
		flags := fmt.Sprintf("-X github.com/vidfarm/vidfarm/controlplane/fsm.hideAbove=%d", hiddenLevel)
		out, err := exec.Command("go", "build", "-ldflags", flags, "-o", hiddenBinPath, ".").CombinedOutput()
		if err != nil {
			hiddenBinErr = fmt.Errorf("go build %s: %v\n%s", flags, err, out)
		}
	})
	if hiddenBinErr != nil {
		t.Fatal(hiddenBinErr)
	}
	return hiddenBinPath
}

// build is one binary the cluster runs.
type build struct {
	name  string
	bin   string
	level fsm.MessageType // the highest command type it applies
	// records is whether it records levels; false for a release from
	// before them, whose member records have none (fsm.Baseline).
	records bool
	args    []string // its own flags
}

// upgradeNode is one member: fixed ports, its data directory, and the
// build it runs now.
type upgradeNode struct {
	id, dir                    string
	public, admin, agent, raft int
	p                          *proc // nil while stopped
	b                          *build
	joined                     bool
}

func (n *upgradeNode) adminClient() *admin.Client {
	return &admin.Client{Server: "http://127.0.0.1:" + strconv.Itoa(n.admin), Token: e2eAdminToken}
}

type upgradeCluster struct {
	t        *testing.T
	nodes    []*upgradeNode
	old, new *build
	// procs is every process the test started, stopped ones too, so the
	// end can check that none panicked.
	procs  []*proc
	began  time.Time
	acct   admin.CreatedAccount
	videos []string
}

func newUpgradeCluster(t *testing.T, old, new *build) *upgradeCluster {
	c := &upgradeCluster{t: t, old: old, new: new, began: time.Now()}
	dir := t.TempDir()
	for i := range 3 {
		n := &upgradeNode{id: fmt.Sprintf("n%d", i+1), public: freePort(t), admin: freePort(t), agent: freePort(t), raft: freePort(t)}
		n.dir = filepath.Join(dir, n.id)
		c.nodes = append(c.nodes, n)
	}
	return c
}

// start runs node i on build b, joining through node 0 the first time.
func (c *upgradeCluster) start(i int, b *build) {
	c.t.Helper()
	n := c.nodes[i]
	n.b, n.p = b, nil
	args := []string{"server", "--node-id", n.id, "--data-dir", n.dir,
		"--listen", fmt.Sprintf("127.0.0.1:%d", n.public), "--admin-listen", fmt.Sprintf("127.0.0.1:%d", n.admin),
		"--agent-listen", fmt.Sprintf("127.0.0.1:%d", n.agent), "--raft-listen", fmt.Sprintf("127.0.0.1:%d", n.raft),
		"--admin-token", e2eAdminToken, "--agent-token", e2eAgentToken, "--rate-limits=false",
		"--blob-secret", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"--allow-private-urls", "--dev-allow-private-webhooks", "--log-level", "info"}
	args = append(args, b.args...)
	if i > 0 && !n.joined {
		args = append(args, "--join", c.nodes[0].adminClient().Server)
	}
	p, ready := startProcBin(c.t, b.bin, fmt.Sprintf("server %s (%s)", n.id, b.name), args, nil, "control plane ready")
	if got := ready["understands"]; b.records && got != float64(b.level) {
		c.t.Fatalf("%s (%s) says it understands up to %v, want %d", n.id, b.name, got, b.level)
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

func (c *upgradeCluster) index(id string) int {
	return slices.IndexFunc(c.nodes, func(n *upgradeNode) bool { return n.id == id })
}

func (c *upgradeCluster) logf(format string, args ...any) {
	c.t.Logf("%v: %s", time.Since(c.began).Round(time.Millisecond), fmt.Sprintf(format, args...))
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
			i := c.index(m.Leader)
			if err != nil || i < 0 || c.nodes[i].p == nil || (leader >= 0 && i != leader) {
				return false
			}
			leader = i
		}
		return leader >= 0
	})
	return leader
}

// levelRecorded says whether the record of n shows the level it should: a
// build from before levels leaves none (the baseline); a newer one reports
// its own, except to a leader from before levels, which would not record
// it (then the record may still show the baseline).
func levelRecorded(n, leader *upgradeNode, got fsm.MessageType) bool {
	switch {
	case !n.b.records:
		return got == fsm.Baseline
	case !leader.b.records:
		return got == n.b.level || got == fsm.Baseline
	}
	return got == n.b.level
}

// settled polls until the running nodes agree on a leader, every node is
// a voter whose record shows the level it should (read from a node that
// records levels, when one runs), every running node reports its build's
// level, and all have applied the same log.
func (c *upgradeCluster) settled() {
	c.t.Helper()
	eventually(c.t, 30*time.Second, "one leader, every member's level recorded, one log applied everywhere", func() bool {
		leader := c.nodes[c.waitLeader()]
		for _, n := range c.up() {
			if !n.b.records {
				continue
			}
			m, err := c.members(n)
			if err != nil || len(m.Members) != len(c.nodes) {
				return false
			}
			for _, mm := range m.Members {
				i := c.index(mm.ID)
				if i < 0 || mm.Suffrage != "Voter" || !levelRecorded(c.nodes[i], leader, fsm.MessageType(mm.Understands)) {
					return false
				}
			}
			break
		}
		applied := map[uint64]bool{}
		for _, n := range c.up() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var st admin.ClusterStatus
			raw, err := n.adminClient().ClusterStatus(ctx)
			cancel()
			if err != nil || json.Unmarshal(raw, &st) != nil || (n.b.records && fsm.MessageType(st.Understands) != n.b.level) {
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

// noneApplied fails the test if a running node applied a command of type typ.
func (c *upgradeCluster) noneApplied(typ fsm.MessageType, why string) {
	c.t.Helper()
	for _, n := range c.up() {
		if got := c.applied(n, typ); got != 0 {
			c.t.Fatalf("%s applied %d %s while %s", n.id, got, typ, why)
		}
	}
}

// eventLogStarted checks that, every member new, the leader switched the
// event log, its sortable ids, its specs by reference, its derived created
// events, routing and the active-webhook limit on once, and that the log records from then on only: a
// video made now is in every node's log, with its prompt (read from the
// video) and its created event derived from it, the ones made before are
// not.
func (c *upgradeCluster) eventLogStarted() {
	c.t.Helper()
	for _, n := range c.nodes {
		eventually(c.t, 30*time.Second, n.id+" to start the event log", func() bool { return c.applied(n, fsm.StartEventLogType) == 1 })
		eventually(c.t, 30*time.Second, n.id+" to make event ids sortable", func() bool { return c.applied(n, fsm.SortableEventIDsType) == 1 })
		eventually(c.t, 30*time.Second, n.id+" to log specs by reference", func() bool { return c.applied(n, fsm.SpecsByReferenceType) == 1 })
		eventually(c.t, 30*time.Second, n.id+" to derive created events", func() bool { return c.applied(n, fsm.DerivedCreatedEventsType) == 1 })
		eventually(c.t, 30*time.Second, n.id+" to start routing", func() bool { return c.applied(n, fsm.StartRoutingType) == 1 })
		eventually(c.t, 30*time.Second, n.id+" to count active webhooks only", func() bool { return c.applied(n, fsm.ActiveWebhookLimitType) == 1 })
		eventually(c.t, 30*time.Second, n.id+" to say next_in_line", func() bool { return c.applied(n, fsm.NextInLineType) == 1 })
	}
	before := slices.Clone(c.videos)
	c.createVideo(c.nodes[0], "after the upgrade")
	for _, n := range c.nodes {
		body := string(n.p.must(http.StatusOK, http.MethodGet, "/v1/events?type=video.created&limit=100", c.acct.APIKey, "").body)
		if !strings.Contains(body, `"evt_created_`+c.videos[len(c.videos)-1]+`"`) || !strings.Contains(body, `"after the upgrade"`) || strings.Contains(body, before[0]) {
			c.t.Fatalf("%s's event log after the upgrade: %s", n.id, body)
		}
	}
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

// createVideo creates a video through node n, retrying retryable answers
// with the same Idempotency-Key, and remembers it.
func (c *upgradeCluster) createVideo(n *upgradeNode, prompt string) {
	c.t.Helper()
	var r reply
	eventually(c.t, 30*time.Second, "a create through "+n.id, func() bool {
		r = n.p.call(http.MethodPost, "/v1/videos", c.acct.APIKey, manualBody(prompt, ""), "Idempotency-Key", prompt)
		return r.status != http.StatusServiceUnavailable
	})
	if r.status != http.StatusCreated {
		c.t.Fatalf("create through %s: %d %s", n.id, r.status, r.body)
	}
	c.videos = append(c.videos, r.obj(c.t)["id"].(string))
}

// upgradePlan is what a rolling-upgrade test checks of its gated command:
// a type the old build cannot apply, which a new leader wants to propose.
type upgradePlan struct {
	gated fsm.MessageType
	// refused checks that the new leader refuses the command while old, the
	// last old member, is stopped or runs the old build.
	refused func(c *upgradeCluster, old *upgradeNode)
	// propose, when set, asks for the command once every member is new; a
	// leader job needs no asking.
	propose func(c *upgradeCluster)
}

// run starts the three nodes on the old build, does some work through
// every node, then upgrades them one at a time (a follower while there is
// one, the leader last). The last old node is stopped, the new leader must
// refuse the gated command; it comes back once on the old build (a reboot
// before its turn), catches up on what the new leader wrote and serves,
// and the command is still refused; then it runs the new build, and the
// command is applied on every node. Throughout, no node stops and writes
// go on.
func (c *upgradeCluster) run(plan upgradePlan) {
	t := c.t
	for i := range c.nodes {
		c.start(i, c.old)
		if i == 0 {
			c.waitLeader()
		}
	}
	c.settled()
	c.logf("three %s nodes up", c.old.name)

	ctx := context.Background()
	eventually(t, 30*time.Second, "an account through n2", func() bool {
		var err error
		c.acct, err = c.nodes[1].adminClient().CreateAccount(ctx, "upgrade", "pro", 1000)
		var e *apierr.Error
		if errors.As(err, &e) && e.Status == http.StatusServiceUnavailable {
			return false
		}
		if err != nil {
			t.Fatalf("create an account: %v", err)
		}
		return true
	})
	for _, n := range c.nodes {
		c.createVideo(n, "before the upgrade, through "+n.id)
	}
	hook := c.nodes[2].p.must(http.StatusCreated, http.MethodPost, "/v1/webhooks", c.acct.APIKey, `{"url":"http://127.0.0.1:1/hooks"}`).obj(t)
	if hook["secret"] == "" {
		t.Fatalf("webhook %v", hook)
	}

	leaderUpgraded := false
	for upgraded := 0; upgraded < len(c.nodes); upgraded++ {
		leader := c.waitLeader()
		i := -1
		for j, n := range c.nodes {
			if n.b == c.old && (i < 0 || i == leader) {
				i = j
			}
		}
		n := c.nodes[i]
		leaderUpgraded = leaderUpgraded || i == leader
		c.logf("upgrading %s (leader: %v)", n.id, i == leader)
		c.stop(i)
		if upgraded == len(c.nodes)-1 {
			plan.refused(c, n)
			c.start(i, c.old)
			c.settled()
			c.createVideo(n, "an old node under a new leader, through "+n.id)
			c.alive()
			plan.refused(c, n)
			c.noneApplied(plan.gated, n.id+" runs the old build")
			c.noneApplied(fsm.StartEventLogType, n.id+" runs the old build")
			c.noneApplied(fsm.StartRoutingType, n.id+" runs the old build")
			c.noneApplied(fsm.SortableEventIDsType, n.id+" runs the old build")
			c.noneApplied(fsm.SpecsByReferenceType, n.id+" runs the old build")
			c.noneApplied(fsm.ActiveWebhookLimitType, n.id+" runs the old build")
			c.noneApplied(fsm.NextInLineType, n.id+" runs the old build")
			c.stop(i)
		}
		c.start(i, c.new)
		c.settled()
		c.alive()
		if upgraded < len(c.nodes)-1 {
			c.createVideo(n, "mid-upgrade, through "+n.id)
			c.noneApplied(plan.gated, "an old member remains")
			c.noneApplied(fsm.StartEventLogType, "an old member remains")
			c.noneApplied(fsm.StartRoutingType, "an old member remains")
			c.noneApplied(fsm.SortableEventIDsType, "an old member remains")
			c.noneApplied(fsm.SpecsByReferenceType, "an old member remains")
			c.noneApplied(fsm.ActiveWebhookLimitType, "an old member remains")
			c.noneApplied(fsm.NextInLineType, "an old member remains")
		}
	}
	if !leaderUpgraded {
		// Raft chose the leader; with pre-vote it does not move without a
		// fault, so this is rare, and the checks hold either way.
		c.logf("the leader moved to an upgraded node before its turn: no node was upgraded while it led")
	}

	// Every member new: the command goes in and every node applies it.
	if plan.propose != nil {
		plan.propose(c)
	}
	for _, n := range c.nodes {
		eventually(t, 30*time.Second, n.id+" to apply "+plan.gated.String(), func() bool { return c.applied(n, plan.gated) == 1 })
	}
	c.eventLogStarted()
	c.alive()
	c.settled()
	for _, n := range c.nodes {
		r := n.p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=100", c.acct.APIKey, "")
		for _, id := range c.videos {
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
	c.logf("rolling upgrade of three nodes done")
}

// upgradeSecretsKey is given to the new build only: the operator sets a
// key with the upgrade, so a new leader wants to seal the secret the old
// cluster stored plain (ResealWebhook).
const upgradeSecretsKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// TestRollingUpgrade upgrades a cluster of this binary built to hide every
// command type above 49 (-X …/fsm.hideAbove=49, a stand-in for the
// release before ResealWebhook). The new nodes run with --secrets-key, so
// a new leader's job wants to seal the webhook secret the old cluster
// stored plain with a ResealWebhook (type 50), on which the old build
// panics. While an old member remains the job is skipped and logged,
// naming it (had the command gone in, the old node restarted under the
// new leader would panic replaying it); once the last member reports the
// new level the job runs at once and every node applies the command.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice and runs three servers")
	}
	old := &build{name: "hides types above 49", bin: hiddenVidfarmBinary(t), level: hiddenLevel, records: true}
	new := &build{name: "new", bin: vidfarmBinary(t), level: fsm.Understood(), records: true, args: []string{"--secrets-key", upgradeSecretsKey}}
	c := newUpgradeCluster(t, old, new)
	const skipped = "leader job skipped: a member does not understand its command yet"
	c.run(upgradePlan{
		gated: fsm.ResealWebhookType,
		refused: func(c *upgradeCluster, old *upgradeNode) {
			l := c.nodes[c.waitLeader()]
			eventually(c.t, 30*time.Second, l.id+" to skip the reseal, naming "+old.id, func() bool {
				for _, line := range findLogs(l.p, skipped, "job", "reseal_secrets", "command", "reseal_webhook") {
					if strings.Contains(fmt.Sprint(line["members"]), old.id) && strings.Contains(fmt.Sprint(line["detail"]), "understands up to 49") {
						return true
					}
				}
				return false
			})
		},
	})
	resealed := 0
	for _, n := range c.up() {
		resealed += len(findLogs(n.p, "sealed webhook signing secrets with the current secrets key", "count", "1"))
	}
	if resealed != 1 {
		t.Errorf("%d leaders logged the reseal, want one", resealed)
	}
}

// TestRollingUpgradeFromPreviousRelease upgrades a cluster of the last
// release before levels (built from its commit in this repository's
// history): its member records have no level, so they stand at the
// baseline (51), and its nodes report nothing. The new nodes serve the
// bench-only POST /admin/v1/bench/fill, whose BenchFill (type 52) that
// release does not know. Upgraded followers report their level only once a
// new node leads; while the last old member remains, the endpoint answers
// 503 cluster_upgrade_in_progress naming it with its level; once it is
// upgraded the fill goes in and every node applies it.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an earlier release and runs three servers")
	}
	old := &build{name: "release " + preStateFileRelease, bin: releaseBinary(t, preStateFileRelease), level: fsm.Baseline}
	new := &build{name: "new", bin: vidfarmBinary(t), level: fsm.Understood(), records: true, args: []string{"--bench-fill"}}
	c := newUpgradeCluster(t, old, new)
	ctx := context.Background()
	fill := func(n *upgradeNode) error {
		_, err := n.adminClient().Do(ctx, http.MethodPost, "/admin/v1/bench/fill", map[string]any{"account_id": c.acct.AccountID, "count": 3})
		return err
	}
	c.run(upgradePlan{
		gated: fsm.BenchFillType,
		refused: func(c *upgradeCluster, old *upgradeNode) {
			l := c.nodes[c.waitLeader()]
			var last error
			eventually(c.t, 30*time.Second, l.id+" to refuse the fill, naming "+old.id, func() bool {
				last = fill(l)
				if last == nil {
					c.t.Fatalf("the fill went in while %s is old", old.id)
				}
				var e *apierr.Error
				return errors.As(last, &e) && e.Status == http.StatusServiceUnavailable && e.Retryable &&
					e.Details["reason"] == "cluster_upgrade_in_progress" && e.Details["command"] == "bench_fill" &&
					fmt.Sprint(e.Details["members"]) == fmt.Sprintf("[map[id:%s understands:%d]]", old.id, fsm.Baseline)
			})
		},
		propose: func(c *upgradeCluster) {
			n := c.nodes[c.waitLeader()]
			eventually(c.t, 30*time.Second, "the fill to go in", func() bool {
				err := fill(n)
				var e *apierr.Error
				if errors.As(err, &e) && e.Status == http.StatusServiceUnavailable {
					return false
				}
				if err != nil {
					c.t.Fatalf("fill once every member is new: %v", err)
				}
				return true
			})
		},
	})
	for _, n := range c.nodes {
		r := n.p.must(http.StatusOK, http.MethodGet, "/v1/videos?limit=1", c.acct.APIKey, "")
		if total := r.obj(t)["total"]; total != float64(len(c.videos)+3) {
			t.Fatalf("%s counts %v videos, want %d: %s", n.id, total, len(c.videos)+3, r.body)
		}
	}
}
