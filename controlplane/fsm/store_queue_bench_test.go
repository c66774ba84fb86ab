package fsm_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkCheckpointDeepQueue measures a checkpoint of a state file while
// one account has VIDFARM_BENCH_QUEUED videos queued (default 50,000), each
// created with an idempotency key: each iteration creates VIDFARM_BENCH_BATCH
// more (default 100; Raft snapshots on its own every 8192 entries), then
// takes the Raft snapshot (copy-ms: the time applies wait on the lock) and
// persists it (persist-ms: the write, applies going on). The queue is what
// a checkpoint must not copy whole.
func BenchmarkCheckpointDeepQueue(b *testing.B) {
	n := 50_000
	if v, err := strconv.Atoi(os.Getenv("VIDFARM_BENCH_QUEUED")); err == nil && v > 0 {
		n = v
	}
	f, err := fsm.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	must := func(c fsm.Command) {
		if _, err := f.ApplyCommand(c); err != nil {
			b.Fatal(err)
		}
	}
	batch := 100
	if v, err := strconv.Atoi(os.Getenv("VIDFARM_BENCH_BATCH")); err == nil && v > 0 {
		batch = v
	}
	must(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanMax, Credits: 1 << 40, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	next := 0
	create := func() {
		id := fmt.Sprintf("vid_%08d", next)
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(next),
			IdempotencyKey: "idem-" + id, BodyHash: sha256.Sum256([]byte(id))})
		next++
	}
	start := time.Now()
	for range n {
		create()
	}
	checkpoint(b, f)
	b.Logf("%d videos queued and checkpointed in %s", n, time.Since(start).Round(time.Millisecond))
	var copyTime, persistTime time.Duration
	for b.Loop() {
		for range batch {
			create()
		}
		t := time.Now()
		snap, err := f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(t)
		t = time.Now()
		if err := snap.Persist(discardSink{}); err != nil {
			b.Fatal(err)
		}
		persistTime += time.Since(t)
	}
	b.ReportMetric(float64(copyTime.Microseconds())/1000/float64(b.N), "copy-ms")
	b.ReportMetric(float64(persistTime.Microseconds())/1000/float64(b.N), "persist-ms")
}
