package scheduler

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/gcstat"
)

// BenchmarkQueueMark is the scheduler's part of what a queue costs the
// garbage collector (controlplane/fsm's BenchmarkQueueMark measures the
// whole state): 50,000 auto videos of one account submitted and left
// queued, with ids as long as the API's. It reports the live objects and
// bytes per queued video and the collector's CPU per queued video for one
// full collection.
func BenchmarkQueueMark(b *testing.B) {
	const n = 50_000
	var objects, bytes, markNs float64
	for b.Loop() {
		objs0, heap0 := gcstat.Live()
		base := gcstat.PerCycle()
		s, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Unix(1_700_000_000, 0)
		for i := range n {
			info := VideoInfo{ID: fmt.Sprintf("vid_%026d", i), AccountID: "acct_00000000000000000000000001"}
			if err := s.Submit(AutoGraph(info), now); err != nil {
				b.Fatal(err)
			}
		}
		objs1, heap1 := gcstat.Live()
		objects, bytes = float64(objs1-objs0)/n, float64(heap1-heap0)/n
		markNs = (gcstat.PerCycle() - base) * 1e9 / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(objects, "objects/video")
	b.ReportMetric(bytes, "heap-B/video")
	b.ReportMetric(markNs, "gc-ns/video")
}
