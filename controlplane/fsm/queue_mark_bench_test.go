package fsm_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/internal/gcstat"
)

// BenchmarkQueueMark measures what a queue costs the garbage collector, the
// largest share of a server's CPU under create load after HTTP: every
// collection marks the whole queue, and its cost is the objects and
// pointers a queued video holds. VIDFARM_BENCH_QUEUE auto videos (default
// 50,000, the body `vidfarm bench create` sends, each with an idempotency
// key) are applied as a follower applies them, from their encoded log
// entries in batches of 64, and checkpointed every 8192 as Raft would.
// It reports the live heap objects and bytes per queued video and the
// collector's CPU per queued video for one full collection
// (runtime/metrics' /cpu/classes/gc/total over 20 forced collections,
// less the same before the queue was made). VIDFARM_BENCH_HEAPPROFILE=FILE
// writes the heap profile with the queue live.
func BenchmarkQueueMark(b *testing.B) {
	n := envInt("VIDFARM_BENCH_QUEUE", 50_000)
	spec := fsm.Spec{Mode: fsm.ModeAuto, Prompt: "A thirty second tour of a solar lantern for campers", DurationSeconds: 5}
	var objects, bytes, markNs float64
	for b.Loop() {
		objs0, heap0 := gcstat.Live()
		base := gcstat.PerCycle()
		f, _ := benchStore(b)
		batch := make([]*raft.Log, 0, 64)
		apply := func() {
			for i, r := range f.ApplyBatch(batch) {
				if res, ok := r.(*fsm.Result); !ok || res.Err != nil {
					b.Fatalf("entry %d: %+v", batch[i].Index, r)
				}
			}
			batch = batch[:0]
		}
		for i := range n {
			id := fmt.Sprintf("vid_%016x", i)
			data, err := fsm.Encode(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: spec, Price: 3, Now: t0 + int64(i),
				IdempotencyKey: fmt.Sprintf("key-%016x", i), BodyHash: sha256.Sum256([]byte(id))})
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, &raft.Log{Index: uint64(i + 10), Term: 1, Type: raft.LogCommand, Data: data})
			if len(batch) == cap(batch) {
				apply()
			}
			if i%8192 == 8191 {
				apply()
				checkpoint(b, f)
			}
		}
		apply()
		checkpoint(b, f)
		if st := f.Stats(); st.Queued != n {
			b.Fatalf("%+v: want %d queued", st, n)
		}
		objs1, heap1 := gcstat.Live()
		objects, bytes = float64(objs1-objs0)/float64(n), float64(heap1-heap0)/float64(n)
		markNs = (gcstat.PerCycle() - base) * 1e9 / float64(n)
		if path := os.Getenv("VIDFARM_BENCH_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		runtime.KeepAlive(f)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(objects, "objects/video")
	b.ReportMetric(bytes, "heap-B/video")
	b.ReportMetric(markNs, "gc-ns/video")
}

// writeHeapProfile writes the heap profile to path: what the queue holds, by
// where it was allocated (run with -memprofilerate 1 to count every object).
func writeHeapProfile(b *testing.B, path string) {
	out, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(out, 0)
		err = errors.Join(err, out.Close())
	}
	if err != nil {
		b.Fatal(err)
	}
}
