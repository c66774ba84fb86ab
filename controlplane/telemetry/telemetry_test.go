package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func f64(v float64) *float64 { return &v }

// testStore is a Store for 5 s heartbeats on the clock *now.
func testStore(now *time.Time) (*Store, Config) {
	*now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cfg := ForHeartbeats(5 * time.Second)
	cfg.Now = func() time.Time { return *now }
	return New(cfg), cfg
}

// TestStore ages a sample through fresh, stale and forgotten, and checks
// that Put sweeps nodes that went silent and a nil Store holds nothing.
func TestStore(t *testing.T) {
	var now time.Time
	s, cfg := testStore(&now)
	s.Put("n1", map[string]GPU{"GPU-0": {MemoryUsedGB: 12, TemperatureC: f64(60)}})
	s.Put("n2", map[string]GPU{"GPU-0": {MemoryUsedGB: 1}})

	steps := []struct {
		after     time.Duration
		ok, stale bool
	}{
		{0, true, false},
		{cfg.StaleAfter, true, false},
		{time.Second, true, true},
		{cfg.ForgetAfter - cfg.StaleAfter - time.Second, true, true},
		{time.Second, false, false},
	}
	for _, st := range steps {
		now = now.Add(st.after)
		v, ok := s.Get("n1")
		if ok != st.ok || v.Stale != st.stale || ok && v.GPUs["GPU-0"].MemoryUsedGB != 12 {
			t.Fatalf("at %s: %+v, %v; want ok %v stale %v", now.Format(time.TimeOnly), v, ok, st.ok, st.stale)
		}
	}
	// n1 and n2 are past ForgetAfter: the next Put drops both from memory.
	s.Put("n3", map[string]GPU{})
	if len(s.nodes) != 1 {
		t.Fatalf("after a sweep the store holds %d nodes, want 1", len(s.nodes))
	}
	s.Forget("n3")
	if _, ok := s.Get("n3"); ok {
		t.Fatal("forgotten node still there")
	}

	var none *Store
	none.Put("n1", nil)
	none.Forget("n1")
	if _, ok := none.Get("n1"); ok {
		t.Fatal("a nil store returned a sample")
	}
}

// TestCollector exports the fresh samples as gauges and leaves stale ones
// out.
func TestCollector(t *testing.T) {
	var now time.Time
	s, cfg := testStore(&now)
	s.Put("old", map[string]GPU{"GPU-9": {MemoryUsedGB: 5, TemperatureC: f64(90)}})
	now = now.Add(cfg.StaleAfter + time.Second)
	s.Put("n1", map[string]GPU{"GPU-0": {MemoryUsedGB: 30.5, UtilizationPercent: f64(42), TemperatureC: f64(67), PowerW: f64(310)}})
	want := `
# HELP vidfarm_node_gpu_memory_used_bytes Memory in use on each render node's GPU (MIG instance: its own), from the agent's last heartbeat; only on the leader.
# TYPE vidfarm_node_gpu_memory_used_bytes gauge
vidfarm_node_gpu_memory_used_bytes{gpu="GPU-0",node_id="n1"} 3.05e+10
# HELP vidfarm_node_gpu_power_watts Power draw of each render node's GPU, from the agent's last heartbeat; only on the leader.
# TYPE vidfarm_node_gpu_power_watts gauge
vidfarm_node_gpu_power_watts{gpu="GPU-0",node_id="n1"} 310
# HELP vidfarm_node_gpu_temperature_celsius Die temperature of each render node's GPU, from the agent's last heartbeat; only on the leader.
# TYPE vidfarm_node_gpu_temperature_celsius gauge
vidfarm_node_gpu_temperature_celsius{gpu="GPU-0",node_id="n1"} 67
# HELP vidfarm_node_gpu_utilization_ratio Utilisation of each render node's GPU (MIG instance: its parent's), 0 to 1, from the agent's last heartbeat; only on the leader.
# TYPE vidfarm_node_gpu_utilization_ratio gauge
vidfarm_node_gpu_utilization_ratio{gpu="GPU-0",node_id="n1"} 0.42
`
	if err := testutil.CollectAndCompare(s.Collector(), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
