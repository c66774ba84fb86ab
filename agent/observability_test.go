package agent

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/deploy/observability"
)

// TestObservabilityGPUMetrics: the GPU series that deploy/observability's
// rules and dashboard use are exported by an agent on a machine with NVIDIA
// GPUs (NVML sampled through Config.SampleGPUs). cmd/vidfarm's
// TestObservabilityMetricsExported checks every other name against a real
// agent, whose GPUs on a test machine are virtual.
func TestObservabilityGPUMetrics(t *testing.T) {
	util, temp := uint32(50), uint32(60)
	a := &agent{cfg: Config{WorkDir: t.TempDir(), SampleGPUs: func() ([]GPU, error) {
		return []GPU{{Index: 0, UUID: "GPU-aaa", Name: "NVIDIA H100", MemoryTotalMB: 81559, MemoryFreeMB: 40000,
			UtilizationGPUPercent: &util, TemperatureC: &temp}}, nil
	}}}
	reg := prometheus.NewRegistry()
	a.m = newMetrics(reg, a)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
	}
	queries, err := observability.Queries()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, q := range queries {
		for _, n := range observability.MetricNames(q.Expr) {
			if !strings.HasPrefix(n, "vidfarm_agent_gpu_") {
				continue
			}
			checked++
			if !exported[n] {
				t.Errorf("%s names %s, which an agent with a GPU does not export", q.Where, n)
			}
		}
	}
	if checked == 0 {
		t.Fatal("the rules and the dashboard name no GPU metric")
	}
}
