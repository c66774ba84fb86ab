package agent

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestMetricsCountTasks: every outcome of every kind the node takes (2
// virtual GPUs, 2 CPU slots: all of them) is counted from 0 (and every kind
// is in the running gauge from 0), a completed
// and a failed task show in the task counters, the running gauge comes
// back to zero, and the state gauges read the registration and the virtual
// GPUs.
func TestMetricsCountTasks(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	startAgent(t, cfg)
	ok := assignment("vid_m1", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "A lighthouse.", DurationSeconds: 10})
	bad := assignment("vid_m2", "upscale", scheduler.Kind("upscale"), wire.Video{Mode: "manual"})
	f.enqueue(ok, bad)
	waitComplete(t, f, ok.TaskID)
	expectFailed(t, f, bad.TaskID, `task kind "upscale"`)
	// The control plane hears of a task's end before the agent counts it.
	waitFor(t, "both tasks counted", func() bool {
		return counterValue(t, reg, "vidfarm_agent_tasks_total", "upscale", "failed") == 1 &&
			counterValue(t, reg, "vidfarm_agent_tasks_total", "plan", "completed") == 1 &&
			gaugeValue(t, reg, "vidfarm_agent_tasks_running", "plan") == 0
	})
	want := `
# HELP vidfarm_agent_tasks_total Tasks this agent ended, by kind and outcome (completed, failed, dropped).
# TYPE vidfarm_agent_tasks_total counter
vidfarm_agent_tasks_total{kind="avatar",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="avatar",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="avatar",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="composite",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="composite",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="composite",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="finalize",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="finalize",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="finalize",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="plan",outcome="completed"} 1
vidfarm_agent_tasks_total{kind="plan",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="plan",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="render",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="render",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="render",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="scene",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="scene",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="scene",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="speech",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="speech",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="speech",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="tts",outcome="completed"} 0
vidfarm_agent_tasks_total{kind="tts",outcome="dropped"} 0
vidfarm_agent_tasks_total{kind="tts",outcome="failed"} 0
vidfarm_agent_tasks_total{kind="upscale",outcome="failed"} 1
# HELP vidfarm_agent_tasks_running Tasks this agent is running, by kind.
# TYPE vidfarm_agent_tasks_running gauge
vidfarm_agent_tasks_running{kind="avatar"} 0
vidfarm_agent_tasks_running{kind="composite"} 0
vidfarm_agent_tasks_running{kind="finalize"} 0
vidfarm_agent_tasks_running{kind="plan"} 0
vidfarm_agent_tasks_running{kind="render"} 0
vidfarm_agent_tasks_running{kind="scene"} 0
vidfarm_agent_tasks_running{kind="speech"} 0
vidfarm_agent_tasks_running{kind="tts"} 0
vidfarm_agent_tasks_running{kind="upscale"} 0
# HELP vidfarm_agent_registered 1 while the agent holds a node credential from the control plane.
# TYPE vidfarm_agent_registered gauge
vidfarm_agent_registered 1
# HELP vidfarm_agent_virtual_gpus Procedural render slots advertised on a machine without NVIDIA GPUs.
# TYPE vidfarm_agent_virtual_gpus gauge
vidfarm_agent_virtual_gpus 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vidfarm_agent_tasks_total", "vidfarm_agent_tasks_running",
		"vidfarm_agent_registered", "vidfarm_agent_virtual_gpus"); err != nil {
		t.Fatal(err)
	}
	// 8 kinds × 3 outcomes from the start, and the unknown kind's failure.
	if n := testutil.CollectAndCount(reg, "vidfarm_agent_task_duration_seconds"); n != 25 {
		t.Fatalf("duration histograms: %d, want 25", n)
	}
}

// TestMetricsGPUs: on a node with NVIDIA GPUs the scrape samples them.
func TestMetricsGPUs(t *testing.T) {
	util, temp := uint32(37), uint32(71)
	a := &agent{cfg: Config{WorkDir: t.TempDir(), SampleGPUs: func() ([]GPU, error) {
		return []GPU{
			{Index: 0, UUID: "GPU-aaa", Name: "NVIDIA H100", MemoryTotalMB: 81559, MemoryFreeMB: 81000, UtilizationGPUPercent: &util, TemperatureC: &temp},
			{Index: 1, UUID: "GPU-bbb", Name: "NVIDIA H100", MemoryTotalMB: 81559, MemoryFreeMB: 1559}, // no utilisation (MIG)
			{Index: 2, Error: "memory: not supported"},
		}, nil
	}}}
	reg := prometheus.NewRegistry()
	a.m = newMetrics(reg, a)
	want := `
# HELP vidfarm_agent_gpu_memory_used_bytes Memory in use on each GPU (NVML).
# TYPE vidfarm_agent_gpu_memory_used_bytes gauge
vidfarm_agent_gpu_memory_used_bytes{index="0",name="NVIDIA H100",uuid="GPU-aaa"} 5.86153984e+08
vidfarm_agent_gpu_memory_used_bytes{index="1",name="NVIDIA H100",uuid="GPU-bbb"} 8.388608e+10
# HELP vidfarm_agent_gpu_utilization_ratio GPU utilisation over NVML's last sample period, 0 to 1.
# TYPE vidfarm_agent_gpu_utilization_ratio gauge
vidfarm_agent_gpu_utilization_ratio{index="0",name="NVIDIA H100",uuid="GPU-aaa"} 0.37
# HELP vidfarm_agent_gpu_temperature_celsius Die temperature of each GPU (NVML).
# TYPE vidfarm_agent_gpu_temperature_celsius gauge
vidfarm_agent_gpu_temperature_celsius{index="0",name="NVIDIA H100",uuid="GPU-aaa"} 71
# HELP vidfarm_agent_registered 1 while the agent holds a node credential from the control plane.
# TYPE vidfarm_agent_registered gauge
vidfarm_agent_registered 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vidfarm_agent_gpu_memory_used_bytes",
		"vidfarm_agent_gpu_utilization_ratio", "vidfarm_agent_gpu_temperature_celsius", "vidfarm_agent_registered"); err != nil {
		t.Fatal(err)
	}
}

// gaugeValue is counterValue for a gauge.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string, values ...string) float64 {
	t.Helper()
	return counterValue(t, reg, name, values...)
}

// counterValue is the value of the series of counter (or gauge) name whose
// label values are values (in label-name order), or 0.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, values ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetValue())
			}
			if slices.Equal(got, values) {
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestMetricsBeforeAnyTask: a scrape of /metrics before the node has run a
// task shows the running gauge and the duration histogram of every kind it
// can be given at 0 (with every outcome for the histogram), so that rate()
// and alerts over them see the series from the start. A node without GPUs
// has no series for the GPU kinds.
func TestMetricsBeforeAnyTask(t *testing.T) {
	t.Parallel()
	gpuKinds := []string{"render", "scene"}
	cpuKinds := []string{"avatar", "composite", "finalize", "plan", "speech", "tts"}
	for _, tc := range []struct {
		name       string
		procedural bool
		kinds      []string
	}{
		{"virtual GPUs and CPU slots", true, append(slices.Clone(gpuKinds), cpuKinds...)},
		{"CPU slots only", false, cpuKinds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeCP(t)
			cfg := testConfig(t, f)
			cfg.Procedural = tc.procedural
			reg := prometheus.NewRegistry()
			cfg.Metrics = reg
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			t.Cleanup(srv.Close)
			startAgent(t, cfg)
			waitFor(t, "the registration", func() bool { return gaugeValue(t, reg, "vidfarm_agent_registered") == 1 })

			want := "# HELP vidfarm_agent_tasks_running Tasks this agent is running, by kind.\n# TYPE vidfarm_agent_tasks_running gauge\n"
			slices.Sort(tc.kinds)
			for _, k := range tc.kinds {
				want += fmt.Sprintf("vidfarm_agent_tasks_running{kind=%q} 0\n", k)
			}
			if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), "vidfarm_agent_tasks_running"); err != nil {
				t.Error(err)
			}
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range append(gpuKinds, cpuKinds...) {
				for _, o := range []string{outcomeCompleted, outcomeDropped, outcomeFailed} {
					line := fmt.Sprintf("vidfarm_agent_task_duration_seconds_count{kind=%q,outcome=%q} 0\n", k, o)
					if got, want := strings.Contains(string(body), line), slices.Contains(tc.kinds, k); got != want {
						t.Errorf("scrape has %q: %v, want %v", strings.TrimSpace(line), got, want)
					}
				}
			}
			if t.Failed() {
				t.Logf("scrape:\n%s", body)
			}
		})
	}
}
