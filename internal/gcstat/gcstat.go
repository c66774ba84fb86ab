// Package gcstat measures what a heap costs the garbage collector, for the
// benchmarks of what the control plane keeps in memory (the queue): the live
// objects and bytes after a full collection, and the collector's CPU for one
// full collection of the heap as it is. A benchmark takes both before and
// after building what it measures and reports the difference per item.
package gcstat

import (
	"runtime"
	"runtime/metrics"
)

// Live is the live heap's objects and bytes after two full collections (a
// sync.Pool keeps what it held for one more cycle).
func Live() (objects, bytes uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapObjects, m.HeapAlloc
}

// PerCycle is the collector's CPU, in seconds, for one full collection of the
// heap as it is: the mean over 20 forced collections of runtime/metrics'
// /cpu/classes/gc/total (an estimate the runtime keeps, idle workers
// included).
func PerCycle() float64 {
	const cycles = 20
	runtime.GC()
	before := cpu()
	for range cycles {
		runtime.GC()
	}
	return (cpu() - before) / cycles
}

func cpu() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}
