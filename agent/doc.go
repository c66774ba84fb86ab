// Package agent is vidfarm's node daemon, the program a GPU node operator runs
// as "vidfarm agent" on each machine of the farm.
//
// It owns, or will own:
//
//   - discovery: what the machine offers to the farm (Capacity), read from
//     NVML for the GPUs and from the operating system for the host
//     (Discover, DiscoverSystem, PrintCapacity for "--print-capacity");
//   - later: registration with the control plane, heartbeats, the long-poll
//     lease of tasks, running pipeline stages, uploads to the blob store,
//     progress reports and draining.
//
// The package never imports controlplane internals; the wire types it shares
// with the control plane live in scheduler.
//
// # Discovery
//
// Discover takes an nvml.Interface (github.com/NVIDIA/go-nvml/pkg/nvml), so
// tests drive it with go-nvml's mocks; DiscoverSystem uses nvml.New(), the
// real libnvidia-ml.so.1. One discovery is one Init, the queries, and one
// Shutdown. It reports per GPU: index, name, UUID, total and free memory (MiB,
// like nvidia-smi), utilisation, MIG mode and the MIG instances; per host: the
// driver and CUDA driver versions, hostname, CPU cores, RAM, and which of the
// tools the pipeline drives (ffmpeg, ffprobe, espeak-ng) are on PATH.
//
// Discovery always returns a usable Capacity. Its error lists what could not
// be read; each part wraps the nvml.Return behind it, so errors.Is(err,
// nvml.ERROR_GPU_IS_LOST) works, and the same text is in Capacity.Warnings so
// it reaches the control plane and --print-capacity. A GPU whose UUID, memory
// or MIG layout could not be read carries an Error and must not be offered
// for work. What the hardware simply does not do is not an error: a GPU that
// answers ERROR_NOT_SUPPORTED for utilisation (utilisation is then null) or
// for MIG (MIG is then off) is reported with everything else that is known.
//
// # Without a driver
//
// go-nvml opens libnvidia-ml.so.1 with dlopen inside Init, so a binary built
// with it starts on any machine. Without the library Init returns
// ERROR_LIBRARY_NOT_FOUND; with the library but no kernel driver it returns
// ERROR_DRIVER_NOT_LOADED. Both make the machine a CPU node: NvidiaDriver is
// false, GPUs is empty, Note says why, and the error is nil, since this is a
// normal configuration. Any other Init failure (no permission, library and
// driver versions that do not match) also gives a CPU node, but returns an
// error wrapping ErrNVMLInit so the operator sees the misconfiguration.
//
// After a failed Init no other NVML function may be called, Shutdown
// included: go-nvml links its C symbols unresolved and binds them lazily, so
// a call into a library that never loaded does not return an error or panic,
// the dynamic loader ends the process ("symbol lookup error: undefined
// symbol: nvmlShutdown", exit status 127). Discover therefore calls Shutdown
// only after Init succeeded.
//
// go-nvml needs cgo. A binary built with CGO_ENABLED=0 still has
// DiscoverSystem, which then reports a CPU node with a note saying so;
// Discover exists only in cgo builds.
package agent
