package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// benchFarm is a farm of 10,000 heterogeneous nodes and 100,000 queued
// manual videos (100,000 ready render tasks, each with a blocked finalize)
// from 1,000 accounts, one of which owns 40% of the queue.
type benchFarm struct {
	s      *State
	nodes  []string
	reqs   []Requirements
	nextID int
	rng    *rand.Rand
}

const (
	benchNodes  = 10_000
	benchVideos = 100_000
	benchModels = 32
)

func newBenchFarm(tb fataler, nodes, videos int) *benchFarm {
	f := &benchFarm{s: newState(tb, DefaultConfig()), rng: rand.New(rand.NewPCG(1, 2))}
	models := make([]string, benchModels)
	for i := range models {
		models[i] = fmt.Sprintf("model-%02d", i)
	}
	// Render classes: each model at 2-3 resolutions.
	for i, m := range models {
		for _, mem := range []float64{16, 24, 40, 70}[i%2:] {
			f.reqs = append(f.reqs, Requirements{GPUs: 1, GPUMemoryGB: mem, Model: m, CPUSlots: 1})
		}
		if i%8 == 0 {
			f.reqs = append(f.reqs, Requirements{GPUs: 2, GPUMemoryGB: 40, Model: m, CPUSlots: 2})
		}
	}
	kinds := []struct {
		gpus int
		mem  float64
	}{{4, 24}, {8, 48}, {8, 80}}
	for i := range nodes {
		k := kinds[i%len(kinds)]
		nd := Node{ID: fmt.Sprintf("node-%05d", i), CPUSlots: 16, Tools: []string{"ffmpeg", "espeak-ng"}}
		for g := range k.gpus {
			nd.GPUs = append(nd.GPUs, GPU{ID: fmt.Sprintf("gpu%d", g), MemoryTotalGB: k.mem, MemoryFreeGB: k.mem})
		}
		perm := f.rng.Perm(benchModels)
		for _, mi := range perm[:16] {
			nd.Models = append(nd.Models, models[mi])
		}
		nd.WarmModels = nd.Models[:2]
		must(tb, f.s.UpsertNode(nd, t0))
		f.nodes = append(f.nodes, nd.ID)
	}
	for range videos {
		f.submit(tb, t0)
	}
	return f
}

func (f *benchFarm) submit(tb fataler, now time.Time) {
	acct := "bulk"
	if f.rng.IntN(10) >= 4 {
		acct = fmt.Sprintf("acct-%03d", f.rng.IntN(999))
	}
	prio := 0
	if f.rng.IntN(10) == 0 {
		prio = 1
	}
	id := fmt.Sprintf("video-%07d", f.nextID)
	f.nextID++
	must(tb, f.s.Submit(ManualGraph(VideoInfo{ID: id, AccountID: acct, Priority: prio}, f.reqs[f.rng.IntN(len(f.reqs))]), now))
}

// BenchmarkPlacement measures placements against the 10,000-node,
// 100,000-task farm in steady state: node after node asks for work, the
// lease is completed at once (a render unblocks its finalize; a finished
// video is forgotten and replaced, so the queue stays at 100,000).
// placements/s counts the whole cycle (Place + Complete + refill);
// place-ns counts Place alone.
func BenchmarkPlacement(b *testing.B) {
	f := newBenchFarm(b, benchNodes, benchVideos)
	now := t0.Add(time.Minute)
	var placed, idle int
	var placeTime time.Duration
	cycle := func(i int) {
		now = now.Add(time.Millisecond)
		start := time.Now()
		l, err := f.s.Place(f.nodes[i%len(f.nodes)], now, leaseDur)
		placeTime += time.Since(start)
		if errors.Is(err, ErrNoWork) {
			idle++
			return
		}
		if err != nil {
			b.Fatal(err)
		}
		placed++
		out, err := f.s.Complete(l.Ref(), now)
		if err != nil {
			b.Fatal(err)
		}
		if out.VideoCompleted {
			must(b, f.s.Forget(out.VideoID))
			f.submit(b, now)
		}
	}
	// Reach steady state (every node asked twice, setup garbage collected)
	// before the clock starts.
	for i := range 2 * benchNodes {
		cycle(i)
	}
	runtime.GC()
	placed, idle, placeTime = 0, 0, 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cycle(i)
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(placed)/secs, "placements/s")
	b.ReportMetric(float64(placeTime.Nanoseconds())/float64(placed+idle), "place-ns")
	b.ReportMetric(float64(idle), "idle-asks")
}

// BenchmarkPlacementFillUp measures Place alone while the farm fills up:
// nothing completes, so nodes run out of GPUs and later asks find no room.
func BenchmarkPlacementFillUp(b *testing.B) {
	f := newBenchFarm(b, benchNodes, benchVideos)
	now := t0.Add(time.Minute)
	placed := 0
	runtime.GC()
	for i := 0; b.Loop(); i++ {
		if _, err := f.s.Place(f.nodes[i%len(f.nodes)], now, time.Hour); err == nil {
			placed++
		}
	}
	b.ReportMetric(float64(placed), "placed")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "asks/s")
}

// TestBenchFarmShape runs the benchmark's farm at a tenth of its size and
// checks every index afterwards.
func TestBenchFarmShape(t *testing.T) {
	f := newBenchFarm(t, benchNodes/10, benchVideos/10)
	st := f.s.Stats()
	if st.Nodes != benchNodes/10 || st.ReadyTasks != benchVideos/10 || st.Tasks != 2*benchVideos/10 {
		t.Fatalf("stats %+v", st)
	}
	for i := range 1000 {
		l := mustPlace(t, f.s, f.nodes[i%len(f.nodes)], at(1))
		if _, err := f.s.Complete(l.Ref(), at(1)); err != nil {
			t.Fatal(err)
		}
	}
	must(t, checkInvariants(f.s))
}

// BenchmarkVideoStatusDeepQueue measures VideoStatus of one account's
// newest video behind that account's own deep queue: the control plane
// asks it after every create and on every GET, so it must not grow with
// the queue (position ranks the task among the account's ready tasks).
func BenchmarkVideoStatusDeepQueue(b *testing.B) {
	for _, depth := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			s := newState(b, DefaultConfig())
			req := gpuReq("m", 1, 24)
			for i := range depth {
				submitManual(b, s, fmt.Sprintf("v%07d", i), "bulk", 0, req, t0)
			}
			last := fmt.Sprintf("v%07d", depth-1)
			b.ReportAllocs()
			for b.Loop() {
				st, err := s.VideoStatus(last)
				if err != nil || st.QueuePosition != depth {
					b.Fatalf("status %+v, %v", st, err)
				}
			}
		})
	}
}

// BenchmarkVideoRecord measures the record the control plane stages for
// every video a command changes (and so for every create).
func BenchmarkVideoRecord(b *testing.B) {
	s := newState(b, DefaultConfig())
	submitManual(b, s, "vm", "a", 0, gpuReq("m", 1, 24), t0)
	must(b, s.Submit(AutoGraph(VideoInfo{ID: "va", AccountID: "a"}), t0))
	for _, id := range []string{"vm", "va"} {
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r, ok := s.VideoRecord(id); !ok || len(r.Tasks) < 2 {
					b.Fatalf("record %+v, %v", r, ok)
				}
			}
		})
	}
}

// BenchmarkTakeChanged measures what the control plane's staging pays on
// every apply batch once a checkpoint interval's backlog (thousands of
// videos changed before staging began) was taken: the take of the few
// videos the batch changed. It must not cost the size of that backlog.
func BenchmarkTakeChanged(b *testing.B) {
	for _, backlog := range []int{0, 16_384} {
		b.Run(fmt.Sprintf("backlog=%d", backlog), func(b *testing.B) {
			s := newState(b, DefaultConfig())
			s.TrackChanges()
			req := gpuReq("m", 1, 24)
			for i := range backlog {
				submitManual(b, s, fmt.Sprintf("b%07d", i), "bulk", 0, req, t0)
			}
			if got := len(s.TakeChanged()); got != backlog {
				b.Fatalf("backlog took %d, want %d", got, backlog)
			}
			const batch = 32
			ids := make([]string, batch)
			for i := range ids {
				ids[i] = fmt.Sprintf("n%07d", i)
				submitManual(b, s, ids[i], "new", 0, req, t0)
			}
			s.TakeChanged()
			b.ReportAllocs()
			for b.Loop() {
				// What a batch's commands do to the set (the commands
				// themselves are not what is measured), then the take.
				for _, id := range ids {
					s.changed(s.videos[id])
				}
				if got := len(s.TakeChanged()); got != batch {
					b.Fatalf("took %d, want %d", got, batch)
				}
			}
		})
	}
}
