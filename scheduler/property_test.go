package scheduler

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var (
	propNodes    = []string{"n0", "n1", "n2", "n3", "n4"}
	propAccounts = []string{"a0", "a1", "a2", "a3"}
	propModels   = []string{"m0", "m1", "m2"}
)

func genNode(t *rapid.T, id string) Node {
	nd := Node{ID: id, CPUSlots: rapid.IntRange(0, 6).Draw(t, "cpu")}
	for i := range rapid.SampledFrom([]int{0, 1, 2, 2, 4, 4}).Draw(t, "gpus") {
		mem := rapid.SampledFrom([]float64{10, 24, 40, 80}).Draw(t, "mem")
		nd.GPUs = append(nd.GPUs, GPU{ID: fmt.Sprintf("g%d", i), MemoryTotalGB: mem, MemoryFreeGB: mem,
			MIG: rapid.IntRange(0, 4).Draw(t, "mig") == 0})
	}
	for _, tool := range []string{"ffmpeg", "espeak-ng"} {
		if rapid.IntRange(0, 4).Draw(t, "tool") > 0 {
			nd.Tools = append(nd.Tools, tool)
		}
	}
	for _, m := range propModels {
		if rapid.IntRange(0, 3).Draw(t, "model") > 0 {
			nd.Models = append(nd.Models, m)
			if rapid.Bool().Draw(t, "warm") {
				nd.WarmModels = append(nd.WarmModels, m)
			}
		}
	}
	nd.Draining = rapid.IntRange(0, 9).Draw(t, "drain") == 0
	return nd
}

func genGPUReq(t *rapid.T) Requirements {
	return Requirements{
		GPUs:        rapid.SampledFrom([]int{1, 1, 1, 2}).Draw(t, "rgpus"),
		GPUMemoryGB: rapid.SampledFrom([]float64{8, 8, 20, 20, 40, 90}).Draw(t, "rmem"),
		Model:       rapid.SampledFrom(append(slices.Clone(propModels), propModels[0], "m-none")).Draw(t, "rmodel"),
		CPUSlots:    rapid.IntRange(0, 2).Draw(t, "rcpu"),
	}
}

// machine drives a State and a twin through the same random commands. The
// twin is replaced by a JSON snapshot round trip of the state now and then;
// both must keep giving identical answers (determinism, restore fidelity).
type machine struct {
	s, twin   *State
	now       time.Time
	videos    []string
	dead      []LeaseRef // leases that ended without completing
	completed []LeaseRef
	maxToken  uint64
	// mirror is s's video records rebuilt from TakeChanged alone, as a
	// control plane writing only what changed keeps them on disk.
	mirror map[string]VideoRecord
}

func (m *machine) both(t *rapid.T, name string, f func(s *State) any) any {
	a, b := f(m.s), f(m.twin)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: state and twin disagree:\n%#v\n%#v", name, a, b)
	}
	return a
}

type result[T any] struct {
	V   T
	Err string
}

func res[T any](v T, err error) result[T] {
	r := result[T]{V: v}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

func (m *machine) lease(t *rapid.T) Lease {
	ls := m.s.Leases()
	if len(ls) == 0 {
		panic(errSkip)
	}
	return rapid.SampledFrom(ls).Draw(t, "lease")
}

func (m *machine) ended(out Outcome, own *LeaseRef) {
	m.dead = append(m.dead, out.Revoked...)
	if own != nil {
		m.dead = append(m.dead, *own)
	}
}

func (m *machine) upsertNode(t *rapid.T) {
	nd := genNode(t, rapid.SampledFrom(propNodes).Draw(t, "node"))
	m.both(t, "upsert", func(s *State) any { return fmt.Sprint(s.UpsertNode(nd, m.now)) })
}

func (m *machine) removeNode(t *rapid.T) {
	id := rapid.SampledFrom(propNodes).Draw(t, "node")
	r := m.both(t, "remove", func(s *State) any { return res(s.RemoveNode(id, m.now)) }).(result[[]Lease])
	for _, l := range r.V {
		m.dead = append(m.dead, l.Ref())
	}
}

func (m *machine) submit(t *rapid.T) {
	id := fmt.Sprintf("v%d", len(m.videos))
	info := VideoInfo{ID: id, AccountID: rapid.SampledFrom(propAccounts).Draw(t, "acct"), Priority: rapid.IntRange(0, 2).Draw(t, "prio")}
	g := AutoGraph(info)
	if rapid.Bool().Draw(t, "manual") {
		g = ManualGraph(info, genGPUReq(t))
	}
	r := m.both(t, "submit", func(s *State) any { return fmt.Sprint(s.Submit(g, m.now)) })
	if r != "<nil>" {
		t.Fatalf("submit: %v", r)
	}
	m.videos = append(m.videos, id)
}

func (m *machine) place(t *rapid.T) {
	id := rapid.SampledFrom(propNodes).Draw(t, "node")
	before, known := m.s.Node(id)
	var want string
	if known {
		ref := m.s.Clone()
		ref.touch(ref.nodes[id], ms(m.now))
		ref.release(ms(m.now)) // as Place does: retries that are due are ready
		want = bruteForcePick(ref, id, m.now)
	}
	r := m.both(t, "place", func(s *State) any { return res(s.Place(id, m.now, leaseDur)) }).(result[Lease])
	if !known {
		if r.Err == "" {
			t.Fatalf("place on unknown node: %+v", r)
		}
		return
	}
	l := r.V
	if r.Err != "" {
		if want != "" {
			t.Fatalf("place on %s: %s; reference picks %s", id, r.Err, want)
		}
		return
	}
	if l.TaskID != want {
		t.Fatalf("place on %s took %s; reference picks %s", id, l.TaskID, want)
	}
	// No placement breaks a constraint.
	q := l.Req
	if q.Model != "" && !slices.Contains(before.Models, q.Model) {
		t.Fatalf("model %s not supported by %s", q.Model, id)
	}
	for _, tool := range q.Tools {
		if !slices.Contains(before.Tools, tool) {
			t.Fatalf("tool %s missing on %s", tool, id)
		}
	}
	if before.Draining || q.CPUSlots > before.FreeCPUSlots || len(l.GPUIDs) != q.GPUs {
		t.Fatalf("lease %+v on node %+v", l, before)
	}
	for _, g := range l.GPUIDs {
		if !slices.Contains(before.IdleGPUs, g) {
			t.Fatalf("GPU %s of %s was not idle", g, id)
		}
		i := slices.IndexFunc(before.GPUs, func(x GPU) bool { return x.ID == g })
		if before.GPUs[i].MemoryFreeGB < q.GPUMemoryGB || (before.GPUs[i].MIG && q.GPUs > 1) {
			t.Fatalf("GPU %+v cannot hold %+v", before.GPUs[i], q)
		}
	}
	if l.Token <= m.maxToken || !l.Deadline.Equal(m.now.Add(leaseDur)) {
		t.Fatalf("token %d after %d, deadline %v", l.Token, m.maxToken, l.Deadline)
	}
	m.maxToken = l.Token
}

func (m *machine) complete(t *rapid.T) {
	l := m.lease(t)
	r := m.both(t, "complete", func(s *State) any { return res(s.Complete(l.Ref(), m.now)) }).(result[Outcome])
	if r.Err != "" {
		t.Fatalf("complete by holder: %s", r.Err)
	}
	m.completed = append(m.completed, l.Ref())
	if r.V.NeedsScenes {
		n := rapid.IntRange(0, 3).Draw(t, "scenes")
		req := genGPUReq(t)
		m.both(t, "scenes", func(s *State) any { return fmt.Sprint(s.AddScenes(l.VideoID, n, req, m.now)) })
	}
}

func (m *machine) fail(t *rapid.T) {
	l := m.lease(t)
	ref := l.Ref()
	// Half the failures back off (retry.go), so retrying tasks take part.
	base := time.Duration(rapid.SampledFrom([]int{0, 0, 1, 30}).Draw(t, "backoff")) * time.Second
	r := m.both(t, "fail", func(s *State) any { return res(s.FailWithBackoff(ref, "boom", m.now, base)) }).(result[Outcome])
	if r.Err != "" || r.V.Requeued == r.V.VideoFailed {
		t.Fatalf("fail by holder: %+v", r)
	}
	m.ended(r.V, &ref)
}

func (m *machine) progress(t *rapid.T) {
	l := m.lease(t)
	p := rapid.Float64Range(0, 100).Draw(t, "pct")
	if r := m.both(t, "progress", func(s *State) any { return fmt.Sprint(s.Progress(l.Ref(), p)) }); r != "<nil>" {
		t.Fatalf("progress by holder: %v", r)
	}
}

func (m *machine) heartbeat(t *rapid.T) {
	id := rapid.SampledFrom(propNodes).Draw(t, "node")
	var held, stale []LeaseRef
	for _, l := range m.s.Leases() {
		if l.NodeID == id && rapid.IntRange(0, 3).Draw(t, "list") > 0 {
			held = append(held, l.Ref())
		}
	}
	for _, d := range m.dead {
		if d.NodeID == id {
			stale = append(stale, d)
		}
	}
	all := append(slices.Clone(held), stale...)
	r := m.both(t, "heartbeat", func(s *State) any { return res(s.Heartbeat(id, all, m.now, leaseDur)) }).(result[HeartbeatResult])
	if r.Err != "" {
		return // unknown node
	}
	if len(r.V.Renewed) != len(held) || !reflect.DeepEqual(r.V.Stale, stale) {
		t.Fatalf("heartbeat held=%v stale=%v: %+v", held, stale, r.V)
	}
}

func (m *machine) tick(t *rapid.T) {
	m.now = m.now.Add(time.Duration(rapid.IntRange(0, 40).Draw(t, "sec")) * time.Second)
	r := m.both(t, "expire", func(s *State) any { return s.Expire(m.now) }).(ExpireResult)
	for i, l := range r.Leases {
		if l.Deadline.After(m.now) {
			t.Fatalf("lease expired early: %+v", l)
		}
		tk, _ := m.s.Task(l.TaskID)
		st, _ := m.s.VideoStatus(l.VideoID)
		// Requeued, or failed; or requeued and then cancelled because a
		// later expiry in the same call failed the video.
		if tk.State != TaskReady && tk.State != TaskFailed && (tk.State != TaskCanceled || st.State != VideoFailed) {
			t.Fatalf("expired task %s is %s, want requeued (or failed)", tk.ID, tk.State)
		}
		if (tk.State == TaskFailed) != r.Expired[i].VideoFailed {
			t.Fatalf("outcome %+v for task %+v", r.Expired[i], tk)
		}
		ref := l.Ref()
		m.ended(r.Expired[i], &ref)
	}
	for _, l := range m.s.Leases() {
		if !l.Deadline.After(m.now) {
			t.Fatalf("lease past its deadline survived Expire: %+v", l)
		}
	}
}

// runAction runs one action; an action with nothing to act on reports
// skipped instead of failing the whole run.
func runAction(t *rapid.T, f func(*rapid.T)) (skipped bool) {
	defer func() {
		if r := recover(); r != nil {
			if r == errSkip {
				skipped = true
				return
			}
			panic(r)
		}
	}()
	f(t)
	return false
}

// errSkip is what machine actions panic with when there is nothing to do.
var errSkip = errors.New("skip")

// stale replays a report from a lease that has ended: it must be refused.
func (m *machine) stale(t *rapid.T) {
	if len(m.dead)+len(m.completed) == 0 {
		panic(errSkip)
	}
	refs := append(slices.Clone(m.dead), m.completed...)
	ref := rapid.SampledFrom(refs).Draw(t, "ref")
	wasCompleted := slices.Contains(m.completed, ref)
	if err := m.s.Progress(ref, 50); !isStale(err) {
		t.Fatalf("progress from ended lease %+v: %v", ref, err)
	}
	if _, err := m.s.Renew(ref, m.now, leaseDur); !isStale(err) {
		t.Fatalf("renew from ended lease %+v: %v", ref, err)
	}
	if _, err := m.s.Fail(ref, "late", m.now); !isStale(err) {
		t.Fatalf("fail from ended lease %+v: %v", ref, err)
	}
	out, err := m.s.Complete(ref, m.now)
	if wasCompleted {
		if err != nil || !out.Duplicate {
			t.Fatalf("repeated completion %+v: %+v %v", ref, out, err)
		}
	} else if !isStale(err) {
		t.Fatalf("complete from ended lease %+v: %v", ref, err)
	}
	// Keep the twin in step (these calls change nothing, but count them).
	_ = m.twin.Progress(ref, 50)
}

func (m *machine) cancel(t *rapid.T) {
	if len(m.videos) == 0 {
		panic(errSkip)
	}
	id := rapid.SampledFrom(m.videos).Draw(t, "video")
	r := m.both(t, "cancel", func(s *State) any { return res(s.Cancel(id, m.now)) }).(result[Outcome])
	m.ended(r.V, nil)
}

func (m *machine) snapshot(t *rapid.T) {
	m.twin = roundTrip(t, m.s)
}

func (m *machine) status(t *rapid.T) {
	if len(m.videos) == 0 {
		panic(errSkip)
	}
	id := rapid.SampledFrom(m.videos).Draw(t, "video")
	r := m.both(t, "status", func(s *State) any { return res(s.VideoStatus(id)) }).(result[VideoStatus])
	st := r.V
	if st.Percent < 0 || st.Percent > 100 || (st.Reason == ReasonNone) == (st.Message != "") {
		t.Fatalf("status %+v", st)
	}
	// Queued: a reason and a position; waiting for earlier tasks or for a
	// retry: a reason, no position.
	if waiting := st.Reason != ReasonNone && st.Reason != ReasonWaitingForDependencies && st.Reason != ReasonRetrying; waiting != (st.QueuePosition > 0) {
		t.Fatalf("status %+v", st)
	}
}

func (m *machine) check(t *rapid.T) {
	if err := checkInvariants(m.s); err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(m.twin); err != nil {
		t.Fatal("twin: ", err)
	}
	full := m.s.Snapshot()
	if !reflect.DeepEqual(full, m.twin.Snapshot()) {
		t.Fatal("state and twin snapshots differ")
	}
	m.checkChanges(t, full)
}

// checkChanges applies the changed records to the mirror and compares the
// header and the mirror with the full snapshot.
func (m *machine) checkChanges(t *rapid.T, full Snapshot) {
	for _, c := range m.s.TakeChanged() {
		if r, ok := m.s.VideoRecord(c.ID); ok {
			m.mirror[c.ID] = r
		} else {
			delete(m.mirror, c.ID)
		}
	}
	head := m.s.SnapshotHeader()
	videos := full.Videos
	full.Videos = nil
	if !reflect.DeepEqual(head, full) {
		t.Fatalf("header differs from the snapshot:\n%#v\n%#v", head, full)
	}
	if len(m.mirror) != len(videos) {
		t.Fatalf("changes rebuild %d videos, the snapshot holds %d", len(m.mirror), len(videos))
	}
	for _, r := range videos {
		if got := m.mirror[r.Video.ID]; !reflect.DeepEqual(got, r) {
			t.Fatalf("video %s rebuilt from changes:\n%#v\nin the snapshot:\n%#v", r.Video.ID, got, r)
		}
	}
}

// TestPropertyScheduler runs random command sequences and checks, after
// every command: indexes agree with the records (no task leased twice, no
// GPU held twice, counts exact); every placement equals the brute-force
// reference policy and breaks no constraint; expired leases requeue;
// reports from ended leases are refused; a snapshot round trip changes no
// answer.
func TestPropertyScheduler(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newState(t, Config{WarmWindow: 20 * time.Second, NodeTimeout: 2 * time.Minute})
		s.TrackChanges()
		m := &machine{s: s, twin: s.Clone(), now: t0, mirror: map[string]VideoRecord{}}
		actions := map[string]func(*rapid.T){
			"upsertNode": m.upsertNode,
			"removeNode": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "rare") == 0 {
					m.removeNode(t)
				}
			},
			"submit":    m.submit,
			"place":     m.place,
			"place2":    m.place,
			"complete":  m.complete,
			"fail":      m.fail,
			"progress":  m.progress,
			"heartbeat": m.heartbeat,
			"tick":      m.tick,
			"stale":     m.stale,
			"cancel":    m.cancel,
			"snapshot":  m.snapshot,
			"status":    m.status,
		}
		// rapid draws small indexes more often: the common commands first.
		names := []string{"place", "submit", "upsertNode", "complete", "tick", "place2", "heartbeat",
			"progress", "fail", "stale", "status", "snapshot", "cancel", "removeNode"}
		if len(names) != len(actions) {
			t.Fatal("names and actions differ")
		}
		// An explicit loop rather than t.Repeat: longer runs (leases need
		// nodes, videos and placements first) at a fixed cost per check.
		for range rapid.IntRange(50, 300).Draw(t, "steps") {
			name := rapid.SampledFrom(names).Draw(t, "action")
			if skipped := runAction(t, actions[name]); !skipped {
				m.check(t)
			}
		}
	})
}

// TestPropertyFairShare: an account with one queued video gets it placed
// within K placements of its class, K being the number of other accounts,
// whatever those accounts have queued or running and whenever tasks
// finish.
func TestPropertyFairShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newState(t, Config{WarmWindow: time.Minute})
		nodes := rapid.IntRange(1, 4).Draw(t, "nodes")
		for i := range nodes {
			nd := gpuNode(fmt.Sprintf("n%d", i), rapid.IntRange(1, 3).Draw(t, "gpus"), 24, "m")
			nd.WarmModels = []string{"m"}
			must(t, s.UpsertNode(nd, t0))
		}
		req := gpuReq("m", 1, 16)
		others := rapid.IntRange(1, 6).Draw(t, "accounts")
		vid := 0
		for a := range others {
			for range rapid.IntRange(1, 40).Draw(t, "videos") {
				submitManual(t, s, fmt.Sprintf("v%d", vid), fmt.Sprintf("acct%d", a), 0, req, t0)
				vid++
			}
		}
		now := t0
		step := func() *Lease { // one random event; returns a placed render lease
			now = now.Add(time.Second)
			if ls := s.Leases(); len(ls) > 0 && rapid.Bool().Draw(t, "finish") {
				l := rapid.SampledFrom(ls).Draw(t, "done")
				_, err := s.Complete(l.Ref(), now)
				must(t, err)
				return nil
			}
			l, err := s.Place(fmt.Sprintf("n%d", rapid.IntRange(0, nodes-1).Draw(t, "node")), now, leaseDur)
			if err != nil || l.Kind != KindRender {
				return nil
			}
			return &l
		}
		for range rapid.IntRange(0, 60).Draw(t, "warmup") {
			step()
		}
		submitManual(t, s, "mine", "lonely", 0, req, now)
		placed := 0
		for i := 0; ; i++ {
			if i > 10_000 {
				t.Fatal("the lonely video was never placed")
			}
			l := step()
			if l == nil {
				continue
			}
			placed++
			if l.VideoID == "mine" {
				break
			}
			if placed > others {
				t.Fatalf("the lonely video waited %d placements, more than the %d other accounts", placed, others)
			}
		}
	})
}

// TestPropertyQueuePosition: with nothing finishing, videos of one class
// and one priority are placed exactly in the order of their reported queue
// positions; with two priorities every high-priority video is ahead of
// every low-priority one (the estimate ignores that serving high-priority
// work shifts the round robin below it).
func TestPropertyQueuePosition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newState(t, Config{})
		nodeID := 0
		addNode := func() string {
			id := fmt.Sprintf("n%d", nodeID)
			nodeID++
			must(t, s.UpsertNode(gpuNode(id, 1, 24, "m"), t0))
			return id
		}
		req := gpuReq("m", 1, 16)
		total := rapid.IntRange(1, 40).Draw(t, "videos")
		twoPrios := rapid.Bool().Draw(t, "two priorities")
		for i := range total {
			acct := rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "acct")
			prio := 0
			if twoPrios {
				prio = rapid.IntRange(0, 1).Draw(t, "prio")
			}
			submitManual(t, s, fmt.Sprintf("v%02d", i), acct, prio, req, t0.Add(time.Duration(rapid.IntRange(0, 5).Draw(t, "age"))*time.Second))
		}
		for range rapid.IntRange(0, total-1).Draw(t, "running") {
			mustPlace(t, s, addNode(), t0)
		}
		pos := map[int]string{}
		maxHigh, minLow := 0, total+1
		for i := range total {
			id := fmt.Sprintf("v%02d", i)
			st, err := s.VideoStatus(id)
			must(t, err)
			if st.QueuePosition > 0 && s.videos[id].prio == 1 {
				maxHigh = max(maxHigh, st.QueuePosition)
			} else if st.QueuePosition > 0 {
				minLow = min(minLow, st.QueuePosition)
			}
			if st.QueuePosition > 0 {
				if other, dup := pos[st.QueuePosition]; dup {
					t.Fatalf("%s and %s share position %d", id, other, st.QueuePosition)
				}
				pos[st.QueuePosition] = id
			}
		}
		if maxHigh >= minLow {
			t.Fatalf("a high-priority video at %d behind a low-priority one at %d", maxHigh, minLow)
		}
		if twoPrios {
			return
		}
		for p := 1; p <= len(pos); p++ {
			l := mustPlace(t, s, addNode(), t0)
			if l.VideoID != pos[p] {
				t.Fatalf("placement %d took %s, position %d was %s", p, l.VideoID, p, pos[p])
			}
		}
	})
}
