//go:build cgo

package agent

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func f64(v float64) *float64 { return &v }

// TestGPUSamples reads mocked NVML machines as a heartbeat does and checks
// the samples sent for the registered GPUs.
func TestGPUSamples(t *testing.T) {
	const mig1, mig2 = "MIG-11111111-0000-0000-0000-000000000000", "MIG-22222222-0000-0000-0000-000000000000"
	hot := func(d *mock.Device, celsius, milliwatts uint32) *mock.Device {
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return celsius, nvml.SUCCESS }
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return milliwatts, nvml.SUCCESS }
		return d
	}
	tests := []struct {
		name string
		lib  func() *mock.Interface
		// unregistered are GPU ids the node did not register with.
		unregistered []string
		want         []wire.GPUSample
	}{
		{
			name: "whole GPUs: memory, utilisation, temperature, power",
			lib: func() *mock.Interface {
				return server("550.54.15", 12040, hot(a100(0), 64, 251_500), a100(2))
			},
			want: []wire.GPUSample{
				{ID: a100UUID(0), MemoryUsedGB: 0, UtilizationPercent: f64(0), TemperatureC: f64(64), PowerW: f64(251.5)},
				// 2 GiB in use: 2.14 decimal GB; no sensors on this one.
				{ID: a100UUID(2), MemoryUsedGB: 2.14, UtilizationPercent: f64(20)},
			},
		},
		{
			name: "MIG: each instance's memory, the parent's temperature, no utilisation or power",
			lib: func() *mock.Interface {
				return server("550.54.15", 12040, enableMIG(hot(a100(1), 71, 300_000), 7, map[int]nvml.Device{
					0: migDevice("NVIDIA A100-SXM4-40GB MIG 3g.20gb", mig1, 19968<<20, 18968<<20),
					3: migDevice("NVIDIA A100-SXM4-40GB MIG 2g.10gb", mig2, 9856<<20, 9856<<20),
				}))
			},
			want: []wire.GPUSample{
				{ID: mig1, MemoryUsedGB: 1.04, TemperatureC: f64(71)},
				{ID: mig2, MemoryUsedGB: 0, TemperatureC: f64(71)},
			},
		},
		{
			name: "a GPU NVML cannot read is skipped, the others sent",
			lib: func() *mock.Interface {
				broken := a100(1)
				broken.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
				return server("550.54.15", 12040, a100(0), broken)
			},
			want: []wire.GPUSample{{ID: a100UUID(0), MemoryUsedGB: 0, UtilizationPercent: f64(0)}},
		},
		{
			name: "an impossible reading and a GPU the node did not register are left out",
			lib: func() *mock.Interface {
				return server("550.54.15", 12040, hot(a100(0), 4000, 0), a100(1), a100(2))
			},
			unregistered: []string{a100UUID(2)},
			want:         []wire.GPUSample{{ID: a100UUID(1), MemoryUsedGB: 1.07, UtilizationPercent: f64(10)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The node registered what discovery found then, less the
			// unregistered ids.
			c, _ := Discover(tc.lib())
			registered := SchedulerGPUs(c)
			for _, id := range tc.unregistered {
				for i, g := range registered {
					if g.ID == id {
						registered = append(registered[:i], registered[i+1:]...)
						break
					}
				}
			}
			gpus, _ := sampleGPUs(tc.lib())
			if got := gpuSamples(gpus, registered); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("samples:\n got %s\nwant %s", samplesString(got), samplesString(tc.want))
			}
		})
	}
}

func samplesString(ss []wire.GPUSample) string {
	out := ""
	for _, s := range ss {
		out += s.ID + ": mem " + fmtF(&s.MemoryUsedGB) + " util " + fmtF(s.UtilizationPercent) + " temp " + fmtF(s.TemperatureC) + " power " + fmtF(s.PowerW) + "; "
	}
	return out
}

func fmtF(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// TestHeartbeatCarriesGPUTelemetry runs an agent on a mocked GPU machine:
// its heartbeats carry each GPU's latest NVML reading. An agent of virtual
// GPUs samples nothing and sends nothing.
func TestHeartbeatCarriesGPUTelemetry(t *testing.T) {
	t.Parallel()
	var celsius atomic.Uint32
	celsius.Store(50)
	lib := func() *mock.Interface {
		d := a100(3)
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return celsius.Load(), nvml.SUCCESS }
		return server("550.54.15", 12040, d)
	}
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Procedural = false
	cfg.Discover = gpuMachine(lib())
	cfg.SampleGPUs = func() ([]GPU, error) { return sampleGPUs(lib()) }
	startAgent(t, cfg)

	sent := func(temp float64) bool {
		for _, hb := range f.snapshot().heartbeats {
			if len(hb.GPUs) == 1 && hb.GPUs[0].ID == a100UUID(3) && hb.GPUs[0].TemperatureC != nil && *hb.GPUs[0].TemperatureC == temp {
				return true
			}
		}
		return false
	}
	waitFor(t, "a heartbeat at 50 °C", func() bool { return sent(50) })
	celsius.Store(83)
	waitFor(t, "a heartbeat at 83 °C", func() bool { return sent(83) })
	hb := f.snapshot().heartbeats
	if g := hb[len(hb)-1].GPUs[0]; g.MemoryUsedGB != 3.22 || g.UtilizationPercent == nil || *g.UtilizationPercent != 30 {
		t.Errorf("sample %+v: want 3 GiB (3.22 GB) in use, 30%% busy", g)
	}

	fv := newFakeCP(t)
	vcfg := testConfig(t, fv)
	var sampled atomic.Int32
	vcfg.SampleGPUs = func() ([]GPU, error) { sampled.Add(1); return nil, nil }
	startAgent(t, vcfg)
	noTelemetry(t, fv, "a virtual node")
	if n := sampled.Load(); n != 0 {
		t.Errorf("a virtual node read NVML %d times for its heartbeats", n)
	}
}

// TestGPUTelemetrySystem samples the real NVML as a heartbeat does. On a
// machine without an NVIDIA driver (the CI machines) there is nothing to
// sample; on a GPU machine every registered GPU gets a sample the control
// plane accepts.
func TestGPUTelemetrySystem(t *testing.T) {
	c, err := DiscoverSystem()
	if !c.NvidiaDriver {
		t.Skip("no NVIDIA driver on this machine")
	}
	if err != nil {
		t.Logf("discovery: %v", err)
	}
	registered := SchedulerGPUs(c)
	gpus, err := SampleGPUs()
	if err != nil {
		t.Logf("sample: %v", err)
	}
	got := gpuSamples(gpus, registered)
	t.Logf("samples: %s", samplesString(got))
	if len(got) != len(registered) {
		t.Fatalf("%d samples for %d registered GPUs", len(got), len(registered))
	}
}

// TestHeartbeatNotHeldByNVML: a GPU sample stuck in NVML does not hold the
// heartbeats, which go on without telemetry, and no second sample piles
// up behind it.
func TestHeartbeatNotHeldByNVML(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{})
	var calls atomic.Int32
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Procedural = false
	cfg.Discover = gpuMachine(a100Box(1))
	cfg.SampleGPUs = func() ([]GPU, error) {
		calls.Add(1)
		<-stuck
		return nil, nil
	}
	startAgent(t, cfg)
	t.Cleanup(func() { close(stuck) })
	noTelemetry(t, f, "an agent whose NVML is stuck")
	if n := calls.Load(); n != 1 {
		t.Errorf("%d samples started while the first was stuck, want 1", n)
	}
}

// gpuMachine discovers cpuMachine with lib's GPUs.
func gpuMachine(lib nvml.Interface) func() (Capacity, error) {
	return func() (Capacity, error) {
		c, err := cpuMachine()
		g, _ := sampleGPUs(lib)
		c.GPUs, c.NvidiaDriver, c.Note = g, true, ""
		return c, err
	}
}

// noTelemetry waits for three heartbeats to f and fails if any carried GPU
// samples.
func noTelemetry(t *testing.T, f *fakeCP, who string) {
	t.Helper()
	waitFor(t, "three heartbeats of "+who, func() bool { return len(f.snapshot().heartbeats) >= 3 })
	for _, hb := range f.snapshot().heartbeats {
		if hb.GPUs != nil {
			t.Fatalf("%s sent GPU samples: %+v", who, hb.GPUs)
		}
	}
}
