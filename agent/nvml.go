//go:build cgo

package agent

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Discover returns this machine's capacity, reading the GPUs through lib and
// the rest from the operating system. The Capacity is always usable; the
// error, when not nil, joins what could not be read (see the package doc).
// A machine without a usable NVIDIA driver is a CPU node with a Note and, for
// a missing library or driver, a nil error.
func Discover(lib nvml.Interface) (Capacity, error) {
	return discover(lib, systemHost)
}

// systemMu serialises DiscoverSystem: go-nvml swaps the package-level
// function behind nvml.Return.Error when the library is loaded and closed.
var systemMu sync.Mutex

// DiscoverSystem is Discover with the machine's own NVML (nvml.New(), which
// loads libnvidia-ml.so.1 in Init). It does not panic where the library is
// missing: that machine is a CPU node.
func DiscoverSystem() (Capacity, error) {
	systemMu.Lock()
	defer systemMu.Unlock()
	return Discover(nvml.New())
}

// SampleGPUs reads the machine's GPUs alone (memory, utilisation), for
// metrics: discovery without the host and tools.
func SampleGPUs() ([]GPU, error) {
	systemMu.Lock()
	defer systemMu.Unlock()
	return sampleGPUs(nvml.New())
}

func sampleGPUs(lib nvml.Interface) ([]GPU, error) {
	var c Capacity
	errs := discoverNVIDIA(lib, &c)
	return c.GPUs, errors.Join(errs...)
}

func discover(lib nvml.Interface, h host) (Capacity, error) {
	c, errs := discoverHost(h)
	errs = append(errs, discoverNVIDIA(lib, &c)...)
	return finish(c, errs)
}

// discoverNVIDIA fills the NVIDIA part of c and returns what it could not read.
func discoverNVIDIA(lib nvml.Interface, c *Capacity) (errs []error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		c.Note = noteNoLibrary
		return nil
	case nvml.ERROR_DRIVER_NOT_LOADED:
		c.Note = noteNoDriver
		return nil
	default:
		c.Note = fmt.Sprintf("NVML failed to initialise (%v): running as a CPU node", ret)
		return []error{fmt.Errorf("%w: %w", ErrNVMLInit, ret)}
	}
	// Only after a successful Init may any other NVML function run,
	// Shutdown included: in a library that never loaded, the call would
	// end the process (see the package doc).
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("nvml shutdown: %w", ret))
		}
	}()
	c.NvidiaDriver = true

	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		c.DriverVersion = v
	} else {
		errs = append(errs, fmt.Errorf("driver version: %w", ret))
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		c.CUDADriverVersion = cudaVersion(v)
	} else {
		errs = append(errs, fmt.Errorf("CUDA driver version: %w", ret))
	}

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		c.Note = noteNoGPUs
		return append(errs, fmt.Errorf("count GPUs: %w", ret))
	}
	if n == 0 {
		c.Note = noteNoGPUs
	}
	for i := range n {
		g, gerrs := discoverGPU(lib, i)
		c.GPUs = append(c.GPUs, g)
		errs = append(errs, gerrs...)
	}
	return errs
}

// problems collects what one GPU or MIG instance could not report, each error
// prefixed with it. warn only records; fail also marks the GPU or instance
// unusable by setting *mark (its Error field), if not yet set.
type problems struct {
	prefix string
	errs   []error
}

func (p *problems) warn(what string, ret nvml.Return) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s: %w", p.prefix, what, ret))
}

func (p *problems) fail(mark *string, what string, ret nvml.Return) {
	p.warn(what, ret)
	if *mark == "" {
		*mark = fmt.Sprintf("%s: %v", what, ret)
	}
}

func discoverGPU(lib nvml.Interface, i int) (GPU, []error) {
	g := GPU{Index: i}
	p := problems{prefix: fmt.Sprintf("gpu %d", i)}

	dev, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		p.fail(&g.Error, "get handle", ret)
		return g, p.errs
	}
	if name, ret := dev.GetName(); ret == nvml.SUCCESS {
		g.Name = name
	} else {
		p.warn("name", ret)
	}
	if uuid, ret := dev.GetUUID(); ret == nvml.SUCCESS {
		g.UUID = uuid
	} else {
		p.fail(&g.Error, "UUID", ret)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemoryTotalMB, g.MemoryFreeMB = mib(mem.Total), mib(mem.Free)
	} else {
		p.fail(&g.Error, "memory info", ret)
	}

	switch u, ret := dev.GetUtilizationRates(); ret {
	case nvml.SUCCESS:
		g.UtilizationGPUPercent, g.UtilizationMemoryPercent = &u.Gpu, &u.Memory
	case nvml.ERROR_NOT_SUPPORTED:
		// consumer cards and GPUs in MIG mode: unknown, not a problem
	default:
		p.warn("utilization", ret)
	}
	switch c, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); ret {
	case nvml.SUCCESS:
		g.TemperatureC = &c
	case nvml.ERROR_NOT_SUPPORTED:
		// no sensor NVML can read (some virtualised GPUs): unknown
	default:
		p.warn("temperature", ret)
	}

	switch mw, ret := dev.GetPowerUsage(); ret {
	case nvml.SUCCESS:
		w := float64(mw) / 1000 // NVML reports milliwatts
		g.PowerW = &w
	case nvml.ERROR_NOT_SUPPORTED:
		// no power sensor NVML can read (many consumer and virtual GPUs)
	default:
		p.warn("power", ret)
	}

	switch current, _, ret := dev.GetMigMode(); ret {
	case nvml.SUCCESS:
		g.MIGEnabled = current == nvml.DEVICE_MIG_ENABLE
	case nvml.ERROR_NOT_SUPPORTED:
		// no MIG on this GPU
	default:
		// The GPU might be partitioned: do not offer it whole.
		p.fail(&g.Error, "MIG mode", ret)
	}
	if g.MIGEnabled {
		g.MIGInstances = discoverMIG(dev, &g, &p)
	}
	return g, p.errs
}

// discoverMIG lists the MIG devices of dev, a GPU in MIG mode.
func discoverMIG(dev nvml.Device, g *GPU, p *problems) []MIGInstance {
	count, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		p.fail(&g.Error, "max MIG device count", ret)
		return nil
	}
	var out []MIGInstance
	for j := range count {
		mig, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // no MIG device in this slot
		}
		m := MIGInstance{Index: j}
		mp := problems{prefix: fmt.Sprintf("%s: MIG device %d", p.prefix, j)}
		if ret == nvml.SUCCESS {
			if name, ret := mig.GetName(); ret == nvml.SUCCESS {
				m.Name, m.Profile = name, migProfile(name)
			} else {
				mp.warn("name", ret)
			}
			if uuid, ret := mig.GetUUID(); ret == nvml.SUCCESS {
				m.UUID = uuid
			} else {
				mp.fail(&m.Error, "UUID", ret)
			}
			if mem, ret := mig.GetMemoryInfo(); ret == nvml.SUCCESS {
				m.MemoryTotalMB, m.MemoryFreeMB = mib(mem.Total), mib(mem.Free)
			} else {
				mp.fail(&m.Error, "memory info", ret)
			}
		} else {
			mp.fail(&m.Error, "get handle", ret)
		}
		p.errs = append(p.errs, mp.errs...)
		out = append(out, m)
	}
	return out
}

// migProfile returns the profile part of a MIG device name:
// "NVIDIA A100-SXM4-40GB MIG 3g.20gb" gives "3g.20gb", a name without it "".
func migProfile(name string) string {
	i := strings.LastIndex(name, "MIG ")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(name[i+len("MIG "):])
}

// cudaVersion formats NVML's CUDA driver version (1000*major + 10*minor).
func cudaVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

func mib(bytes uint64) uint64 { return bytes >> 20 }
