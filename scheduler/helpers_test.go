package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// fataler is what test helpers need of *testing.T, *testing.B and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const leaseDur = 30 * time.Second

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func newState(tb fataler, cfg Config) *State {
	tb.Helper()
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// gpuNode is a node with n GPUs of memGB each, every tool, and models.
func gpuNode(id string, n int, memGB float64, models ...string) Node {
	nd := Node{ID: id, CPUSlots: 8, Tools: []string{"ffmpeg", "espeak-ng"}, Models: models}
	for i := range n {
		nd.GPUs = append(nd.GPUs, GPU{ID: fmt.Sprintf("%s-gpu%d", id, i), MemoryTotalGB: memGB, MemoryFreeGB: memGB})
	}
	return nd
}

func gpuReq(model string, gpus int, memGB float64) Requirements {
	return Requirements{GPUs: gpus, GPUMemoryGB: memGB, Model: model, CPUSlots: 1}
}

func must(tb fataler, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func mustPlace(tb fataler, s *State, node string, now time.Time) Lease {
	tb.Helper()
	l, err := s.Place(node, now, leaseDur)
	if err != nil {
		tb.Fatalf("Place(%s): %v", node, err)
	}
	return l
}

func submitManual(tb fataler, s *State, id, acct string, prio int, req Requirements, now time.Time) {
	tb.Helper()
	must(tb, s.Submit(ManualGraph(VideoInfo{ID: id, AccountID: acct, Priority: prio}, req), now))
}

// checkInvariants verifies the indexes against the records. It panics-free
// reports the first broken invariant as an error.
func checkInvariants(s *State) error {
	running := map[*account]int{}
	tokens := map[uint64]bool{}
	for i, e := range s.leaseHeap {
		t := e.t
		if int(t.lIdx) != i || t.state != TaskLeased || t.lease == nil ||
			e.deadline != t.lease.deadline || e.token != t.lease.token {
			return fmt.Errorf("lease heap entry %d (%s) inconsistent", i, t.id)
		}
		if i > 0 && s.leaseLess(i, (i-1)/2) {
			return fmt.Errorf("lease heap order broken at %d", i)
		}
		if tokens[t.lease.token] {
			return fmt.Errorf("token %d used by two leases", t.lease.token)
		}
		tokens[t.lease.token] = true
		if t.lease.token > s.nextToken {
			return fmt.Errorf("token %d beyond counter %d", t.lease.token, s.nextToken)
		}
		running[t.v.acct]++
		n := t.lease.node
		if s.nodes[n.spec.ID] != n || n.leased[t.lease.nIdx] != t {
			return fmt.Errorf("task %s: node index broken", t.id)
		}
		if len(t.lease.gpus) != t.cls.req.GPUs {
			return fmt.Errorf("task %s holds %d GPUs, needs %d", t.id, len(t.lease.gpus), t.cls.req.GPUs)
		}
	}
	leased := 0
	for id, n := range s.nodes {
		cpu := 0
		for i, t := range n.leased {
			if t.lease == nil || int(t.lease.nIdx) != i || t.lease.node != n {
				return fmt.Errorf("node %s lease list broken", id)
			}
			cpu += t.cls.req.CPUSlots
			leased++
		}
		if cpu != n.usedCPU {
			return fmt.Errorf("node %s: usedCPU %d, leases hold %d", id, n.usedCPU, cpu)
		}
		for i := range n.gpus {
			g := &n.gpus[i]
			if g.busy != nil && (g.busy.lease == nil || g.busy.lease.node != n || !slices.Contains(g.busy.lease.gpus, g.id)) {
				return fmt.Errorf("node %s GPU %s busy with a task that does not hold it", id, g.id)
			}
		}
	}
	if leased != len(s.leaseHeap) {
		return fmt.Errorf("%d leases on nodes, %d in heap", leased, len(s.leaseHeap))
	}
	for id, a := range s.accounts {
		if a.running != running[a] {
			return fmt.Errorf("account %s: running %d, leases %d", id, a.running, running[a])
		}
		for i, aq := range a.queues {
			if aq.aIdx != i || aq.acct != a || aq.b.heap[aq.bIdx].aq != aq || aq.tasks.Len() == 0 || a.queue(aq.lvl.prio, aq.cls.idx) != aq {
				return fmt.Errorf("account %s queue %d broken", id, i)
			}
		}
	}
	ready := 0
	for i, l := range s.levels {
		p := l.prio
		if l.ready == 0 || (i > 0 && s.levels[i-1].prio <= p) {
			return fmt.Errorf("level %d (%d of %d): ready=%d, out of order or empty", p, i, len(s.levels), l.ready)
		}
		lr := 0
		for ci, b := range l.buckets {
			if b == nil || len(b.heap) == 0 {
				if l.tops[ci] != (topEntry{}) || (b != nil && (b.tasks != 0 || b.lvl != l || b.ci != ci)) {
					return fmt.Errorf("empty bucket (%d,%d) has a top key", p, ci)
				}
				continue
			}
			bt := 0
			for i, e := range b.heap {
				aq := e.aq
				if aq.bIdx != i || aq.lvl != l || aq.cls.idx != ci || b.lvl != l || b.ci != ci {
					return fmt.Errorf("bucket (%d,%d) entry %d broken", p, ci, i)
				}
				btBefore := bt
				if e.head != aq.head() {
					return fmt.Errorf("bucket (%d,%d): stale head copy for %s", p, ci, aq.acct.id)
				}
				if e.n != aq.tasks.Len() {
					return fmt.Errorf("bucket (%d,%d): stale task count copy for %s: %d, holds %d", p, ci, aq.acct.id, e.n, aq.tasks.Len())
				}
				if e.key != keyOf(aq.acct) {
					return fmt.Errorf("bucket (%d,%d): stale key copy for %s", p, ci, aq.acct.id)
				}
				if i == 0 && l.tops[ci] != (topEntry{key: e.key, head: aq.head()}) {
					return fmt.Errorf("bucket (%d,%d): stale top entry", p, ci)
				}
				if i > 0 && b.less(i, (i-1)/2) {
					return fmt.Errorf("bucket (%d,%d) heap order broken", p, ci)
				}
				var prev *task
				for _, t := range aq.tasks.Items() {
					if t.aq != aq || t.state != TaskReady || t.v.prio != p || t.cls != aq.cls || t.v.acct != aq.acct {
						return fmt.Errorf("ready task %s misfiled", t.id)
					}
					if prev != nil && !prev.older(t) {
						return fmt.Errorf("task order broken at %s", t.id)
					}
					if r := aq.rank(t); r != bt-btBefore {
						return fmt.Errorf("task %s ranked %d, is %d", t.id, r, bt-btBefore)
					}
					prev = t
					bt++
				}
			}
			if bt != b.tasks {
				return fmt.Errorf("bucket (%d,%d) counts %d tasks, holds %d", p, ci, b.tasks, bt)
			}
			lr += bt
		}
		if lr != l.ready {
			return fmt.Errorf("level %d counts %d, holds %d", p, l.ready, lr)
		}
		ready += lr
	}
	if ready != s.ready {
		return fmt.Errorf("state counts %d ready tasks, levels hold %d", s.ready, ready)
	}
	readyTasks := 0
	ntasks := 0
	for _, t := range allTasks(s) {
		id := t.id
		ntasks++
		if found, _ := s.task(t.id); found != t || t.v.tasks[t.idx] != t || s.videos[t.v.id] != t.v {
			return fmt.Errorf("task %s index broken", id)
		}
		pending := int32(0)
		for _, d := range t.deps {
			if d.state != TaskDone {
				pending++
			}
		}
		if t.awaitsScenes() && !t.v.scenesAdded {
			pending++
		}
		if !t.state.terminal() && pending != t.pending {
			return fmt.Errorf("task %s: pending %d, want %d", id, t.pending, pending)
		}
		switch t.state {
		case TaskReady:
			readyTasks++
			if t.pending != 0 || t.aq == nil {
				return fmt.Errorf("ready task %s has pending deps or no queue", id)
			}
		case TaskBlocked:
			if t.pending == 0 {
				return fmt.Errorf("blocked task %s has no pending deps", id)
			}
		case TaskLeased:
			if t.lease == nil || t.lIdx < 0 {
				return fmt.Errorf("leased task %s without lease", id)
			}
		}
		if t.state != TaskLeased && t.lease != nil {
			return fmt.Errorf("task %s is %s but holds a lease", id, t.state)
		}
		if t.state != TaskReady && t.aq != nil {
			return fmt.Errorf("task %s is %s but queued", id, t.state)
		}
		if t.v.state.terminal() && !t.state.terminal() {
			return fmt.Errorf("task %s is %s in a %s video", id, t.state, t.v.state)
		}
	}
	if ntasks != s.ntasks {
		return fmt.Errorf("%d tasks, %d counted", ntasks, s.ntasks)
	}
	if readyTasks != ready {
		return fmt.Errorf("%d ready tasks, %d queued", readyTasks, ready)
	}
	for _, c := range s.classes {
		want := 0
		for _, n := range s.nodes {
			if n.live() && n.staticFit(&c.req) {
				want++
			}
			if n.staticFit(&c.req) != slices.ContainsFunc(n.capList, func(ce capEntry) bool { return int(ce.ci) == c.idx }) {
				return fmt.Errorf("node %s capList wrong for class %s", n.spec.ID, c.key)
			}
		}
		if c.capable != want {
			return fmt.Errorf("class %s: capable %d, want %d", c.key, c.capable, want)
		}
	}
	return nil
}

// bruteForcePick is the placement policy written as a scan over every task:
// the reference Place's indexes must agree with. It returns "" for no work.
func bruteForcePick(s *State, nodeID string, now time.Time) string {
	n := s.nodes[nodeID]
	if n == nil || n.spec.Draining {
		return ""
	}
	var cands []*task
	for _, t := range allTasks(s) {
		if t.state != TaskReady || !n.staticFit(&t.cls.req) || !nodeFits(n, &t.cls.req) {
			continue
		}
		cands = append(cands, t)
	}
	if len(cands) == 0 {
		return ""
	}
	var prios []int
	for _, t := range cands {
		if !slices.Contains(prios, t.v.prio) {
			prios = append(prios, t.v.prio)
		}
	}
	slices.Sort(prios)
	slices.Reverse(prios)
	for _, p := range prios {
		if id := bruteForceLevel(s, n, cands, p, now); id != "" {
			return id
		}
	}
	return ""
}

func bruteForceLevel(s *State, n *node, cands []*task, prio int, now time.Time) string {
	// Per class, accounts in fair-share order, each offering its oldest
	// task; the first (within failedLookahead) not failed on n is the offer.
	heads := map[*class]map[*account]*task{}
	for _, t := range cands {
		if t.v.prio != prio {
			continue
		}
		if heads[t.cls] == nil {
			heads[t.cls] = map[*account]*task{}
		}
		if h, ok := heads[t.cls][t.v.acct]; !ok || t.older(h) {
			heads[t.cls][t.v.acct] = t
		}
	}
	before := func(a, b *task) bool {
		if a.v.acct != b.v.acct {
			return accountAhead(a.v.acct, b.v.acct)
		}
		return a.older(b)
	}
	var best, warm *task
	for c, byAcct := range heads {
		var hs []*task
		for _, h := range byAcct {
			hs = append(hs, h)
		}
		slices.SortFunc(hs, func(a, b *task) int {
			if accountAhead(a.v.acct, b.v.acct) {
				return -1
			}
			return 1
		})
		var offer *task
		for i, h := range hs {
			if i == failedLookahead {
				break
			}
			if !(h.past().failures > 0 && c.capable > len(h.past().failedNodes) && slices.Contains(h.past().failedNodes, n.spec.ID)) {
				offer = h
				break
			}
		}
		if offer == nil {
			continue
		}
		if best == nil || before(offer, best) {
			best = offer
		}
		if offer.cls.req.Model != "" && n.warm[offer.cls.req.Model] && (warm == nil || before(offer, warm)) {
			warm = offer
		}
	}
	if best == nil {
		return ""
	}
	if warm != nil && warm != best && warm.v.acct.running == best.v.acct.running &&
		now.UnixMilli()-best.readyAt < s.cfg.WarmWindow.Milliseconds() {
		return warm.id
	}
	return best.id
}

func isStale(err error) bool { return errors.Is(err, ErrStaleLease) }

// nodeFits is the reference for freeView.fits: whether r fits n's free
// capacity now, by a scan of its GPUs.
func nodeFits(n *node, r *Requirements) bool {
	if r.CPUSlots > n.freeCPU() {
		return false
	}
	if r.GPUs == 0 {
		return true
	}
	count := 0
	for i := range n.gpus {
		g := &n.gpus[i]
		if g.busy == nil && g.eligible(r) {
			count++
			if count == r.GPUs {
				return true
			}
		}
	}
	return false
}

// accountAhead is the reference fair-share order on live accounts.
func accountAhead(a, b *account) bool {
	if a.running != b.running {
		return a.running < b.running
	}
	if a.lastServed != b.lastServed {
		return a.lastServed < b.lastServed
	}
	return a.id < b.id
}

// allTasks lists every task of every video.
func allTasks(s *State) []*task {
	var out []*task
	for _, v := range s.videos {
		out = append(out, v.tasks...)
	}
	return out
}
