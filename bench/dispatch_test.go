package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vidfarm/vidfarm/scheduler"
)

// The dispatch comparison: the same farm and queue, dispatched by the
// scheduler and by a Postgres FOR UPDATE SKIP LOCKED queue (pgqueue_test.go).
//
//	go test -run '^$' -bench Dispatch -benchtime 3s ./bench/
//
// Workload (shared by both, from one seeded generator): 10,000 nodes of
// three kinds (4×24 GB, 8×48 GB, 8×80 GB GPUs), each supporting 16 of 32
// models; 100,000 queued single-GPU render tasks over 112 (model, GPU
// memory) classes (16, 24, 40 or 70 GB), from 1,000 accounts of which one
// holds 40%, 10% at priority 1. Node after node asks for work; the task it
// gets is completed at once and replaced by a new one, so the queue stays
// at 100,000. placements/s counts that whole cycle in both benchmarks.

const (
	dispatchNodes  = 10_000
	dispatchTasks  = 100_000
	dispatchModels = 32
	dispatchLease  = 30 * time.Second
	// pgDispatchers is the number of concurrent dispatchers (one
	// connection each) against Postgres: agents long-polling in parallel.
	pgDispatchers = 16
)

var dispatchT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type dispatchNode struct {
	id     string
	gpus   int
	memGB  float64 // per GPU
	models []string
	warm   []string
}

type dispatchClass struct {
	memGB float64
	model string
}

// dispatchWorkload generates the farm and an endless stream of tasks.
type dispatchWorkload struct {
	nodes   []dispatchNode
	classes []dispatchClass
	rng     *rand.Rand
}

func newDispatchWorkload(nodes int) *dispatchWorkload {
	w := &dispatchWorkload{rng: rand.New(rand.NewPCG(1, 2))}
	models := make([]string, dispatchModels)
	for i := range models {
		models[i] = fmt.Sprintf("model-%02d", i)
	}
	for i, m := range models { // each model at 3 or 4 memory sizes (resolutions)
		for _, mem := range []float64{16, 24, 40, 70}[i%2:] {
			w.classes = append(w.classes, dispatchClass{memGB: mem, model: m})
		}
	}
	kinds := []struct {
		gpus int
		mem  float64
	}{{4, 24}, {8, 48}, {8, 80}}
	for i := range nodes {
		k := kinds[i%len(kinds)]
		n := dispatchNode{id: fmt.Sprintf("node-%05d", i), gpus: k.gpus, memGB: k.mem}
		for _, mi := range w.rng.Perm(dispatchModels)[:16] {
			n.models = append(n.models, models[mi])
		}
		n.warm = n.models[:2]
		w.nodes = append(w.nodes, n)
	}
	return w
}

// next returns the next task of the stream. Not safe for concurrent use.
func (w *dispatchWorkload) next() pgTask {
	acct := "bulk"
	if w.rng.IntN(10) >= 4 {
		acct = fmt.Sprintf("acct-%03d", w.rng.IntN(999))
	}
	prio := 0
	if w.rng.IntN(10) == 0 {
		prio = 1
	}
	c := w.classes[w.rng.IntN(len(w.classes))]
	return pgTask{Account: acct, Priority: prio, MemGB: c.memGB, Model: c.model}
}

// fits reports whether node n can ever run task t (the hard constraints).
func (n dispatchNode) fits(memGB float64, model string) bool {
	return memGB <= n.memGB && slices.Contains(n.models, model)
}

// schedulerNode is n as the scheduler sees it.
func (n dispatchNode) schedulerNode() scheduler.Node {
	nd := scheduler.Node{ID: n.id, CPUSlots: 16, Tools: []string{"ffmpeg", "espeak-ng"}, Models: n.models, WarmModels: n.warm}
	for g := range n.gpus {
		nd.GPUs = append(nd.GPUs, scheduler.GPU{ID: fmt.Sprintf("gpu%d", g), MemoryTotalGB: n.memGB, MemoryFreeGB: n.memGB})
	}
	return nd
}

// schedulerFarm is the workload loaded into a scheduler.State.
type schedulerFarm struct {
	w      *dispatchWorkload
	s      *scheduler.State
	nextID int
}

func newSchedulerFarm(tb testing.TB, nodes, tasks int) *schedulerFarm {
	tb.Helper()
	s, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	f := &schedulerFarm{w: newDispatchWorkload(nodes), s: s}
	for _, n := range f.w.nodes {
		if err := s.UpsertNode(n.schedulerNode(), dispatchT0); err != nil {
			tb.Fatal(err)
		}
	}
	for range tasks {
		f.submit(tb, dispatchT0)
	}
	return f
}

// submit queues the next task as a one-task video (a render with no
// finalize), so a placement is the same unit of work as a Postgres row.
func (f *schedulerFarm) submit(tb testing.TB, now time.Time) {
	t := f.w.next()
	g := scheduler.Graph{
		Video: scheduler.VideoInfo{ID: fmt.Sprintf("video-%07d", f.nextID), AccountID: t.Account, Priority: t.Priority},
		Mode:  scheduler.ModeManual,
		Tasks: []scheduler.TaskSpec{{Name: scheduler.NameRender, Kind: scheduler.KindRender,
			Req: scheduler.Requirements{GPUs: 1, GPUMemoryGB: t.MemGB, Model: t.Model, CPUSlots: 1}}},
	}
	f.nextID++
	if err := f.s.Submit(g, now); err != nil {
		tb.Fatal(err)
	}
}

// cycle lets node i ask for work, completes the lease and refills the
// queue. It returns the lease, or ok false when the node got nothing.
func (f *schedulerFarm) cycle(tb testing.TB, i int, now time.Time) (l scheduler.Lease, placeTime time.Duration, ok bool) {
	n := f.w.nodes[i%len(f.w.nodes)]
	start := time.Now()
	l, err := f.s.Place(n.id, now, dispatchLease)
	placeTime = time.Since(start)
	if errors.Is(err, scheduler.ErrNoWork) {
		return l, placeTime, false
	}
	if err != nil {
		tb.Fatal(err)
	}
	out, err := f.s.Complete(l.Ref(), now)
	if err != nil {
		tb.Fatal(err)
	}
	if !out.VideoCompleted {
		tb.Fatalf("video %s of a one-task graph not completed: %+v", l.VideoID, out)
	}
	if err := f.s.Forget(out.VideoID); err != nil {
		tb.Fatal(err)
	}
	f.submit(tb, now)
	return l, placeTime, true
}

// BenchmarkDispatchScheduler measures the scheduler on the dispatch
// workload: one goroutine (the FSM applies placements one at a time), node
// after node asking. placements/s counts the whole cycle (Place, Complete,
// Forget, Submit); place-ns is Place alone. It is the placement decision in
// memory: in production each placement is also a Raft log entry.
func BenchmarkDispatchScheduler(b *testing.B) {
	f := newSchedulerFarm(b, dispatchNodes, dispatchTasks)
	now := dispatchT0.Add(time.Minute)
	var placed, idle int
	var placeTime time.Duration
	run := func(i int) {
		now = now.Add(time.Millisecond)
		_, d, ok := f.cycle(b, i, now)
		placeTime += d
		if ok {
			placed++
		} else {
			idle++
		}
	}
	for i := range 2 * dispatchNodes { // steady state before the clock starts
		run(i)
	}
	runtime.GC()
	placed, idle, placeTime = 0, 0, 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		run(i)
	}
	b.ReportMetric(float64(placed)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(placeTime.Nanoseconds())/float64(max(placed+idle, 1)), "place-ns")
	b.ReportMetric(float64(idle), "idle-asks")
}

// BenchmarkDispatchPostgres measures the same workload against the Postgres
// queue with pgDispatchers concurrent dispatchers, each on its own
// connection, taking nodes in turn. placements/s counts the whole cycle
// (dispatch statement, then complete-and-refill statement); dispatch-ns is
// the mean latency of the dispatch statement alone under that concurrency.
// synchronous_commit=on is Postgres as deployed (durable commits, the
// counterpart of a Raft log entry); =off leaves the WAL flush out, the
// closer counterpart of the in-memory scheduler figure.
func BenchmarkDispatchPostgres(b *testing.B) {
	for _, mode := range []string{"on", "off"} {
		b.Run("synchronous_commit="+mode, func(b *testing.B) { benchDispatchPostgres(b, mode) })
	}
}

func benchDispatchPostgres(b *testing.B, syncCommit string) {
	ctx := context.Background()
	admin, err := pgConnect(ctx, pgDSN())
	if err != nil {
		b.Skipf("postgres unreachable at %s: %v", pgDSN(), err)
	}
	b.Cleanup(func() { _ = admin.Close(context.Background()) })
	q := newPGQueue()
	if err := q.create(ctx, admin); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := q.drop(context.Background(), admin); err != nil {
			b.Errorf("drop %s: %v", q.schema, err)
		}
	})
	w := newDispatchWorkload(dispatchNodes)
	tasks := make([]pgTask, dispatchTasks)
	for i := range tasks {
		tasks[i] = w.next()
	}
	if err := q.load(ctx, admin, tasks); err != nil {
		b.Fatal(err)
	}
	conns := make([]*pgx.Conn, pgDispatchers)
	for i := range conns {
		c, err := pgConnect(ctx, pgDSN())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(context.Background()) })
		if _, err := c.Exec(ctx, "SET synchronous_commit = "+syncCommit); err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	// The generator is not safe for concurrent use; its cost (well under a
	// microsecond) is taken outside the dispatch timing.
	var wmu sync.Mutex
	nextTask := func() pgTask {
		wmu.Lock()
		defer wmu.Unlock()
		return w.next()
	}
	var (
		ticket       atomic.Int64 // node order and work left
		placed, idle atomic.Int64
		dispatchNS   atomic.Int64
		firstErr     error
		errOnce      sync.Once
	)
	work := func(conn *pgx.Conn, limit int64) {
		for {
			i := ticket.Add(1) - 1
			if i >= limit {
				return
			}
			n := w.nodes[i%int64(len(w.nodes))]
			next := nextTask()
			start := time.Now()
			l, ok, err := q.dispatch(ctx, conn, n.id, n.memGB, n.models, dispatchLease)
			dispatchNS.Add(int64(time.Since(start)))
			if err == nil && ok {
				err = q.completeAndRefill(ctx, conn, l, next)
			}
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				return
			}
			if ok {
				placed.Add(1)
			} else {
				idle.Add(1)
			}
		}
	}
	runAll := func(limit int64) {
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() { work(c, limit) })
		}
		wg.Wait()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
	}
	runAll(2 * pgDispatchers * 50) // warm caches and prepared statements
	ticket.Store(0)
	placed.Store(0)
	idle.Store(0)
	dispatchNS.Store(0)
	b.ResetTimer()
	runAll(int64(b.N))
	b.StopTimer()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(placed.Load())/secs, "placements/s")
	b.ReportMetric(float64(dispatchNS.Load())/float64(max(placed.Load()+idle.Load(), 1)), "dispatch-ns")
	b.ReportMetric(float64(idle.Load()), "idle-asks")
}

// TestSchedulerDispatchWorkload runs the scheduler benchmark's cycle on a
// small farm and checks every placement against the hard constraints.
func TestSchedulerDispatchWorkload(t *testing.T) {
	f := newSchedulerFarm(t, 100, 1000)
	byID := map[string]dispatchNode{}
	for _, n := range f.w.nodes {
		byID[n.id] = n
	}
	now := dispatchT0
	placed := 0
	for i := range 2000 {
		now = now.Add(time.Millisecond)
		l, _, ok := f.cycle(t, i, now)
		if !ok {
			continue
		}
		placed++
		if n := byID[l.NodeID]; !n.fits(l.Req.GPUMemoryGB, l.Req.Model) {
			t.Fatalf("task %s (%v GB, %s) placed on %s (%v GB, %v)", l.TaskID, l.Req.GPUMemoryGB, l.Req.Model, n.id, n.memGB, n.models)
		}
	}
	if placed < 1900 {
		t.Fatalf("only %d of 2000 asks placed a task", placed)
	}
	if st := f.s.Stats(); st.ReadyTasks != 1000 {
		t.Fatalf("queue drifted: %+v", st)
	}
}

// TestPostgresQueueDispatch checks the Postgres queue the benchmark
// measures: 200 tasks, 8 concurrent dispatchers, every task leased exactly
// once and only to a node that can run it. It skips when Postgres is
// unreachable, unless VIDFARM_REQUIRE_PG is set.
func TestPostgresQueueDispatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgConnect(ctx, pgDSN())
	if err != nil {
		if os.Getenv("VIDFARM_REQUIRE_PG") != "" {
			t.Fatalf("postgres unreachable at %s and VIDFARM_REQUIRE_PG is set: %v", pgDSN(), err)
		}
		t.Skipf("postgres unreachable at %s (set VIDFARM_REQUIRE_PG to make this a failure): %v", pgDSN(), err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	newQueue := func(t *testing.T) *pgQueue {
		q := newPGQueue()
		if err := q.create(ctx, admin); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := q.drop(context.Background(), admin); err != nil {
				t.Errorf("drop %s: %v", q.schema, err)
			}
		})
		return q
	}

	t.Run("order", func(t *testing.T) {
		q := newQueue(t)
		err := q.load(ctx, admin, []pgTask{
			{Account: "a", Priority: 0, MemGB: 24, Model: "m1"}, // oldest, low priority
			{Account: "b", Priority: 1, MemGB: 80, Model: "m1"}, // too big for the node
			{Account: "c", Priority: 1, MemGB: 24, Model: "m2"}, // model not on the node
			{Account: "d", Priority: 1, MemGB: 16, Model: "m1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			l, ok, err := q.dispatch(ctx, admin, "n1", 48, []string{"m1", "m3"}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, l.Task.Account)
		}
		if !slices.Equal(got, []string{"d", "a"}) {
			t.Fatalf("dispatched %v, want [d a]: priority first, then age, within the constraints", got)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		q := newQueue(t)
		w := newDispatchWorkload(8)
		// Every task fits at least one of the 8 nodes.
		var tasks []pgTask
		for len(tasks) < 200 {
			tk := w.next()
			if slices.ContainsFunc(w.nodes, func(n dispatchNode) bool { return n.fits(tk.MemGB, tk.Model) }) {
				tasks = append(tasks, tk)
			}
		}
		if err := q.load(ctx, admin, tasks); err != nil {
			t.Fatal(err)
		}
		leases := make([][]pgLease, len(w.nodes))
		errs := make([]error, len(w.nodes))
		var wg sync.WaitGroup
		for i, n := range w.nodes {
			conn, err := pgConnect(ctx, pgDSN())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close(context.Background()) })
			wg.Go(func() {
				for {
					l, ok, err := q.dispatch(ctx, conn, n.id, n.memGB, n.models, time.Minute)
					if err != nil || !ok {
						errs[i] = err
						return
					}
					leases[i] = append(leases[i], l)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		seen := map[int64]string{}
		for i, ls := range leases {
			n := w.nodes[i]
			for _, l := range ls {
				if prev, dup := seen[l.ID]; dup {
					t.Errorf("task %d leased twice: to %s and %s", l.ID, prev, n.id)
				}
				seen[l.ID] = n.id
				if !n.fits(l.Task.MemGB, l.Task.Model) {
					t.Errorf("task %d (%v GB, %s) leased to %s (%v GB, %v)", l.ID, l.Task.MemGB, l.Task.Model, n.id, n.memGB, n.models)
				}
			}
		}
		if len(seen) != len(tasks) {
			t.Errorf("%d of %d tasks leased", len(seen), len(tasks))
		}
		rows, err := admin.Query(ctx, `SELECT id, state, coalesce(leased_by, '') FROM `+q.table)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			id          int64
			state, node string
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.state, &x.node)
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if r.state != "leased" || r.node != seen[r.id] {
				t.Errorf("row %d is %s by %q, the dispatchers saw it leased by %q", r.id, r.state, r.node, seen[r.id])
			}
		}
	})
}
