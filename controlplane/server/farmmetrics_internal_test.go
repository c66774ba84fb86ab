package server

import (
	"maps"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

func TestQueueAgesBuckets(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	waits := []struct {
		kind  scheduler.Kind
		model string
		age   time.Duration
	}{
		{scheduler.KindRender, "m", 500 * time.Millisecond},
		{scheduler.KindRender, "m", 90 * time.Second},
		{scheduler.KindRender, "m", 48 * time.Hour}, // past the last bucket: only in +Inf
		{scheduler.KindRender, "m", -time.Minute},   // a leader clock ahead: waited zero
		{scheduler.KindFinalize, "", 10 * time.Second},
	}
	each := func(fn func(scheduler.Kind, string, time.Time)) {
		for _, w := range waits {
			fn(w.kind, w.model, now.Add(-w.age))
		}
	}
	got := queueAges(each, now)
	if len(got) != 2 {
		t.Fatalf("%d series, want 2 (render/m and finalize)", len(got))
	}
	r := got[queueKey{scheduler.KindRender, "m"}]
	if r.count != 4 || r.sum != 0.5+90+48*3600 {
		t.Errorf("render: count %d sum %v, want 4 and %v", r.count, r.sum, 0.5+90+48*3600)
	}
	cum := r.cumulative()
	for le, want := range map[float64]uint64{1: 2, 60: 2, 120: 3, 86400: 3} {
		if cum[le] != want {
			t.Errorf("render: bucket le=%v holds %d, want %d", le, cum[le], want)
		}
	}
	f := got[queueKey{scheduler.KindFinalize, ""}].cumulative()
	if f[5] != 0 || f[15] != 1 {
		t.Errorf("finalize: le=5 %d, le=15 %d; want 0 and 1", f[5], f[15])
	}
}

func TestNodeCounts(t *testing.T) {
	view := func(gpus, idle int, down, draining bool, cordoned ...bool) fsm.NodeView {
		var v fsm.NodeView
		for i := range gpus {
			v.Info.GPUs = append(v.Info.GPUs, scheduler.GPU{ID: string(rune('a' + i))})
		}
		v.Info.IdleGPUs = make([]string, idle)
		v.Info.Down, v.Info.Draining, v.Info.Cordoned = down, draining, len(cordoned) > 0
		return v
	}
	nodes, gpus := nodeCounts([]fsm.NodeView{
		view(4, 3, false, false), // live, one lease
		view(2, 1, false, true),  // draining, one lease left
		view(8, 8, true, true),   // down while draining: down
		view(0, 0, false, false), // a CPU-only node
		// Cordoned (or drained) by an operator: takes nothing new, so it
		// is not live, or VidfarmNoLiveNodes could never fire for a farm
		// whose every node an operator left cordoned.
		view(4, 4, false, false, true),
	})
	if want := map[string]int{"live": 2, "draining": 2, "down": 1}; !maps.Equal(nodes, want) {
		t.Errorf("nodes %v, want %v", nodes, want)
	}
	if want := map[string]int{"busy": 2, "idle": 3, "unavailable": 13}; !maps.Equal(gpus, want) {
		t.Errorf("gpus %v, want %v", gpus, want)
	}
}

// BenchmarkQueueAges buckets 100,000 waits of 8 kinds and models: the part
// of a scrape that runs under the FSM's read lock besides the walk itself
// (scheduler's BenchmarkEachReady).
func BenchmarkQueueAges(b *testing.B) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	models := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	each := func(fn func(scheduler.Kind, string, time.Time)) {
		for i := range 100_000 {
			fn(scheduler.KindRender, models[i/12_500], now.Add(-time.Duration(i)*time.Second))
		}
	}
	for b.Loop() {
		if got := queueAges(each, now); len(got) != len(models) {
			b.Fatalf("%d series", len(got))
		}
	}
}
