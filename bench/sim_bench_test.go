package bench

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
)

// BenchmarkSimWeek1000GPUs is the speed aim of the simulator: one simulated
// week of a 1,000-GPU farm (125 nodes of 8 H100) at 10,000 videos per hour.
// BENCH_SIM_HOURS shortens the run (for profiling).
func BenchmarkSimWeek1000GPUs(b *testing.B) {
	fleet := mustDecodeFile(b, "testdata/fleet-1000gpu.json", DecodeFleet)
	wl := mustDecodeFile(b, "testdata/workload-10k.json", DecodeWorkload)
	hours := 168.0
	if h, err := strconv.ParseFloat(os.Getenv("BENCH_SIM_HOURS"), 64); err == nil {
		hours = h
	}
	// As `vidfarm bench sim` does: collect less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	// The simulating goroutine is the benchmark's own (the source is
	// another): locked to its thread, the thread's CPU time is its CPU
	// time, which other work on a shared machine changes far less than the
	// wall time (reported as sim-cpu-s, on Linux).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, cpuOK := threadCPU()
	var rep SimReport
	for b.Loop() {
		var err error
		rep, err = Simulate(fleet, wl, SimConfig{Hours: hours, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
	}
	if cpu1, ok := threadCPU(); cpuOK && ok {
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "sim-cpu-s")
	}
	b.ReportMetric(rep.Submitted, "videos")
	b.ReportMetric(hours*3600/(b.Elapsed().Seconds()/float64(b.N)), "x-realtime")
}
