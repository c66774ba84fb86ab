package fsm_test

import (
	"fmt"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkWatchFollowed measures an apply's cost when streams on this node
// follow VIDFARM_BENCH_FOLLOWED queued videos (default 10,000): each op is
// a GrantCredits-free command that may change any video (a create queued
// behind them all), after which the watch reads every followed video.
func BenchmarkWatchFollowed(b *testing.B) {
	n := envInt("VIDFARM_BENCH_FOLLOWED", 10_000)
	f, must := benchStore(b)
	for i := range n {
		must(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_%08d", i), AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(i)})
	}
	for i := range n {
		sub, ok := f.Follow("a", fmt.Sprintf("vid_%08d", i))
		if !ok {
			b.Fatal("cannot follow")
		}
		b.Cleanup(sub.Close)
	}
	i := 0
	for b.Loop() {
		must(&fsm.CreateVideo{VideoID: fmt.Sprintf("new_%08d", i), AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: t0 + int64(n+i)})
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/followed")
}
