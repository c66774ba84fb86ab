package agent

import (
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// telemetryWait is the longest a heartbeat waits for NVML: a GPU that fell
// off the bus can hold NVML calls for many seconds, and the heartbeat must
// still renew the leases.
const telemetryWait = time.Second

// gpuTelemetry samples the node's GPUs for a heartbeat (Config.SampleGPUs,
// NVML) and returns a sample for each GPU it registered with. A node of
// virtual GPUs, or without GPUs, sends none and reads nothing. What NVML
// could not read is left out, never an error: telemetry must not cost the
// heartbeat that renews the leases. A sample that takes longer than
// telemetryWait is not waited for; until it returns, later heartbeats start
// no other and go without telemetry.
func (a *agent) gpuTelemetry() []wire.GPUSample {
	if a.capacity.Virtual || len(a.capacity.GPUs) == 0 {
		return nil
	}
	if !a.sampling.CompareAndSwap(false, true) {
		return nil // the last sample is still stuck in NVML
	}
	done := make(chan []wire.GPUSample, 1)
	go func() {
		defer a.sampling.Store(false)
		gpus, err := a.cfg.SampleGPUs()
		if err != nil {
			a.log.Debug("GPU sample for the heartbeat incomplete", "err", err)
		}
		done <- gpuSamples(gpus, a.capacity.GPUs)
	}()
	timer := time.NewTimer(telemetryWait)
	defer timer.Stop()
	select {
	case s := <-done:
		return s
	case <-timer.C:
		a.log.Warn("NVML did not answer in time: heartbeat sent without GPU telemetry", "waited", telemetryWait.String())
		return nil
	}
}

// gpuSamples matches NVML readings to the GPUs the node registered (by UUID,
// as SchedulerGPUs names them): a whole GPU reports its memory in use,
// utilisation, temperature and power; a MIG instance its own memory in use
// and its parent GPU's utilisation and temperature (NVML reports neither
// per instance), but not the parent's power, which is the whole board's.
// Memory is in SchedulerGPUs' decimal GB. A GPU or instance with an Error,
// one not registered, and a sample the control plane would refuse
// (wire.GPUSample.Check) are left out.
func gpuSamples(gpus []GPU, registered []scheduler.GPU) []wire.GPUSample {
	total := make(map[string]float64, len(registered))
	for _, g := range registered {
		total[g.ID] = g.MemoryTotalGB
	}
	var out []wire.GPUSample
	add := func(s wire.GPUSample) {
		if t, ok := total[s.ID]; ok && s.Check(t) == nil {
			out = append(out, s)
			delete(total, s.ID) // one sample per GPU
		}
	}
	for _, g := range gpus {
		if g.Error != "" {
			continue
		}
		util, temp := asFloat(g.UtilizationGPUPercent), asFloat(g.TemperatureC)
		if !g.MIGEnabled {
			add(wire.GPUSample{ID: g.UUID, MemoryUsedGB: usedGB(g.MemoryTotalMB, g.MemoryFreeMB),
				UtilizationPercent: util, TemperatureC: temp, PowerW: g.PowerW})
			continue
		}
		for _, m := range g.MIGInstances {
			if m.Error == "" {
				add(wire.GPUSample{ID: m.UUID, MemoryUsedGB: usedGB(m.MemoryTotalMB, m.MemoryFreeMB),
					UtilizationPercent: util, TemperatureC: temp})
			}
		}
	}
	return out
}

// usedGB is the memory in use, total less free in MiB, in decimal GB.
func usedGB(totalMB, freeMB uint64) float64 { return gb(totalMB - min(freeMB, totalMB)) }

func asFloat(v *uint32) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}
