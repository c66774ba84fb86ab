//go:build cgo

package agent

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// The fakes below are go-nvml mocks (function fields). A method whose field
// is left nil panics when called, so each fake also checks that Discover
// calls nothing it should not: no NVML function after a failed Init, no MIG
// listing on a GPU without MIG, no utilisation query on a MIG device.
//
// go-nvml ships a ready DGX A100 server (pkg/nvml/mock/dgxa100), but it
// imports github.com/google/uuid, which is not in vidfarm's go.sum; a100Box
// mirrors it (8 × A100-SXM4-40GB, driver 550.54.15, CUDA 12.4).

const gib = uint64(1) << 30

// server is an NVML that initialises and lists devs.
func server(driver string, cuda int, devs ...nvml.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return driver, nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return cuda, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

// failingInit is an NVML whose Init fails with ret; nothing else is mocked.
func failingInit(ret nvml.Return) *mock.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return ret }}
}

// device is a GPU that answers everything Discover asks, with MIG disabled.
func device(name, uuid string, total, free uint64, util nvml.Utilization) *mock.Device {
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: total, Free: free, Used: total - free}, nvml.SUCCESS
		},
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return util, nvml.SUCCESS },
		// No sensor unless a test sets GetTemperatureFunc.
		GetTemperatureFunc: func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED },
		// No power sensor unless a test sets GetPowerUsageFunc.
		GetPowerUsageFunc: func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED },
		GetMigModeFunc: func() (int, int, nvml.Return) {
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
	}
}

func a100(i int) *mock.Device {
	return device("NVIDIA A100-SXM4-40GB", a100UUID(i), 40*gib, 40*gib-uint64(i)*gib,
		nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(i)})
}

func a100UUID(i int) string { return fmt.Sprintf("GPU-a1000000-0000-0000-0000-%012d", i) }

func a100Box(n int) *mock.Interface {
	devs := make([]nvml.Device, n)
	for i := range devs {
		devs[i] = a100(i)
	}
	return server("550.54.15", 12040, devs...)
}

// migDevice is a MIG device: only name, UUID and memory are mocked.
func migDevice(name, uuid string, total, free uint64) *mock.Device {
	return &mock.Device{
		GetNameFunc:       func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUUIDFunc:       func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: total, Free: free}, nvml.SUCCESS },
	}
}

// enableMIG puts d in MIG mode with maxCount MIG slots, filled as in slots.
func enableMIG(d *mock.Device, maxCount int, slots map[int]nvml.Device) *mock.Device {
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED // as on real MIG-mode GPUs
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return maxCount, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
		if m, ok := slots[j]; ok {
			return m, nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	return d
}

func notSupportedUtil() (nvml.Utilization, nvml.Return) {
	return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
}

func notSupportedMIG() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }

// wantA100 is the GPU Discover should report for a100(i).
func wantA100(i int) GPU {
	return GPU{
		Index: i, Name: "NVIDIA A100-SXM4-40GB", UUID: a100UUID(i),
		MemoryTotalMB: 40960, MemoryFreeMB: 40960 - uint64(i)*1024,
		UtilizationGPUPercent: u32(uint32(10 * i)), UtilizationMemoryPercent: u32(uint32(i)),
	}
}

// gpuNode is testHost's capacity with the given NVIDIA part.
func gpuNode(gpus ...GPU) Capacity {
	c := cpuNode("")
	c.NvidiaDriver = true
	c.DriverVersion = "550.54.15"
	c.CUDADriverVersion = "12.4"
	c.GPUs = append(c.GPUs, gpus...)
	return c
}

func withWarnings(c Capacity, warnings ...string) Capacity {
	c.Warnings = warnings
	return c
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name string
		lib  func() *mock.Interface
		want Capacity
		// wantErrs must all match the error with errors.Is; none means a nil error.
		wantErrs      []error
		wantShutdowns int
	}{
		{
			name: "DGX A100: 8 GPUs",
			lib:  func() *mock.Interface { return a100Box(8) },
			want: func() Capacity {
				c := gpuNode()
				for i := range 8 {
					c.GPUs = append(c.GPUs, wantA100(i))
				}
				return c
			}(),
			wantShutdowns: 1,
		},
		{
			name: "MIG enabled on one GPU with two instances",
			lib: func() *mock.Interface {
				return server("550.54.15", 12040, a100(0), enableMIG(a100(1), 7, map[int]nvml.Device{
					0: migDevice("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "MIG-11111111-0000-0000-0000-000000000000", 19968<<20, 19000<<20),
					3: migDevice("NVIDIA A100-SXM4-40GB MIG 2g.10gb", "MIG-22222222-0000-0000-0000-000000000000", 9856<<20, 9856<<20),
				}))
			},
			want: gpuNode(wantA100(0), GPU{
				Index: 1, Name: "NVIDIA A100-SXM4-40GB", UUID: a100UUID(1),
				MemoryTotalMB: 40960, MemoryFreeMB: 39936, MIGEnabled: true,
				MIGInstances: []MIGInstance{
					{Index: 0, UUID: "MIG-11111111-0000-0000-0000-000000000000", Name: "NVIDIA A100-SXM4-40GB MIG 3g.20gb", Profile: "3g.20gb", MemoryTotalMB: 19968, MemoryFreeMB: 19000},
					{Index: 3, UUID: "MIG-22222222-0000-0000-0000-000000000000", Name: "NVIDIA A100-SXM4-40GB MIG 2g.10gb", Profile: "2g.10gb", MemoryTotalMB: 9856, MemoryFreeMB: 9856},
				},
			}),
			wantShutdowns: 1,
		},
		{
			name: "consumer GPU: utilisation and MIG not supported",
			lib: func() *mock.Interface {
				d := device("NVIDIA GeForce RTX 4090", "GPU-40900000-0000-0000-0000-000000000000", 24564<<20, 23000<<20, nvml.Utilization{})
				d.GetUtilizationRatesFunc = notSupportedUtil
				d.GetMigModeFunc = notSupportedMIG
				return server("550.54.15", 12040, d)
			},
			want: gpuNode(GPU{
				Index: 0, Name: "NVIDIA GeForce RTX 4090", UUID: "GPU-40900000-0000-0000-0000-000000000000",
				MemoryTotalMB: 24564, MemoryFreeMB: 23000,
			}),
			wantShutdowns: 1,
		},
		{
			name: "temperatures: one read, one that fails",
			lib: func() *mock.Interface {
				hot, broken := a100(0), a100(1)
				hot.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
					if s != nvml.TEMPERATURE_GPU {
						return 0, nvml.ERROR_INVALID_ARGUMENT
					}
					return 64, nvml.SUCCESS
				}
				broken.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
				return server("550.54.15", 12040, hot, broken)
			},
			want: withWarnings(gpuNode(func() GPU {
				g := wantA100(0)
				g.TemperatureC = u32(64)
				return g
			}(), wantA100(1)), "gpu 1: temperature: ERROR_UNKNOWN"),
			wantErrs:      []error{nvml.ERROR_UNKNOWN},
			wantShutdowns: 1,
		},
		{
			name: "no library: CPU node",
			lib:  func() *mock.Interface { return failingInit(nvml.ERROR_LIBRARY_NOT_FOUND) },
			want: cpuNode(noteNoLibrary),
		},
		{
			name: "library but no kernel driver: CPU node",
			lib:  func() *mock.Interface { return failingInit(nvml.ERROR_DRIVER_NOT_LOADED) },
			want: cpuNode(noteNoDriver),
		},
		{
			name: "library and driver mismatch: CPU node and an error",
			lib:  func() *mock.Interface { return failingInit(nvml.ERROR_LIB_RM_VERSION_MISMATCH) },
			want: withWarnings(cpuNode("NVML failed to initialise (ERROR_LIB_RM_VERSION_MISMATCH): running as a CPU node"),
				"NVML initialisation failed: ERROR_LIB_RM_VERSION_MISMATCH"),
			wantErrs: []error{ErrNVMLInit, nvml.ERROR_LIB_RM_VERSION_MISMATCH},
		},
		{
			name: "driver without GPUs: CPU node",
			lib:  func() *mock.Interface { return server("550.54.15", 12040) },
			want: func() Capacity {
				c := gpuNode()
				c.Note = noteNoGPUs
				return c
			}(),
			wantShutdowns: 1,
		},
		{
			name: "lost GPU and unreadable GPU: the others still reported",
			lib: func() *mock.Interface {
				bad := a100(2)
				bad.GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
				bad.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_NO_PERMISSION }
				bad.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_TIMEOUT }
				lib := a100Box(4)
				lib.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
					switch i {
					case 1:
						return nil, nvml.ERROR_GPU_IS_LOST
					case 2:
						return bad, nvml.SUCCESS
					}
					return a100(i), nvml.SUCCESS
				}
				return lib
			},
			want: withWarnings(gpuNode(wantA100(0),
				GPU{Index: 1, Error: "get handle: ERROR_GPU_IS_LOST"},
				GPU{Index: 2, UUID: a100UUID(2), Error: "memory info: ERROR_NO_PERMISSION"},
				wantA100(3)),
				"gpu 1: get handle: ERROR_GPU_IS_LOST",
				"gpu 2: name: ERROR_UNKNOWN",
				"gpu 2: memory info: ERROR_NO_PERMISSION",
				"gpu 2: utilization: ERROR_TIMEOUT",
			),
			wantErrs:      []error{nvml.ERROR_GPU_IS_LOST, nvml.ERROR_UNKNOWN, nvml.ERROR_NO_PERMISSION, nvml.ERROR_TIMEOUT},
			wantShutdowns: 1,
		},
		{
			name: "MIG that cannot be read: GPUs and instances marked unusable",
			lib: func() *mock.Interface {
				noCount := enableMIG(a100(0), 7, nil)
				noCount.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
				noMode := a100(1)
				noMode.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_GPU_IS_LOST }
				badUUID := migDevice("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "", 4864<<20, 4864<<20)
				badUUID.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
				badSlots := enableMIG(a100(2), 3, map[int]nvml.Device{1: badUUID})
				inner := badSlots.GetMigDeviceHandleByIndexFunc
				badSlots.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
					if j == 0 {
						return nil, nvml.ERROR_INVALID_ARGUMENT
					}
					return inner(j)
				}
				return server("550.54.15", 12040, noCount, noMode, badSlots)
			},
			want: withWarnings(gpuNode(
				GPU{Index: 0, Name: "NVIDIA A100-SXM4-40GB", UUID: a100UUID(0), MemoryTotalMB: 40960, MemoryFreeMB: 40960,
					MIGEnabled: true, Error: "max MIG device count: ERROR_UNKNOWN"},
				func() GPU {
					g := wantA100(1)
					g.Error = "MIG mode: ERROR_GPU_IS_LOST"
					return g
				}(),
				GPU{Index: 2, Name: "NVIDIA A100-SXM4-40GB", UUID: a100UUID(2), MemoryTotalMB: 40960, MemoryFreeMB: 38912,
					MIGEnabled: true, MIGInstances: []MIGInstance{
						{Index: 0, Error: "get handle: ERROR_INVALID_ARGUMENT"},
						{Index: 1, Name: "NVIDIA A100-SXM4-40GB MIG 1g.5gb", Profile: "1g.5gb", MemoryTotalMB: 4864, MemoryFreeMB: 4864,
							Error: "UUID: ERROR_UNKNOWN"},
					}},
			),
				"gpu 0: max MIG device count: ERROR_UNKNOWN",
				"gpu 1: MIG mode: ERROR_GPU_IS_LOST",
				"gpu 2: MIG device 0: get handle: ERROR_INVALID_ARGUMENT",
				"gpu 2: MIG device 1: UUID: ERROR_UNKNOWN",
			),
			wantErrs:      []error{nvml.ERROR_UNKNOWN, nvml.ERROR_GPU_IS_LOST, nvml.ERROR_INVALID_ARGUMENT},
			wantShutdowns: 1,
		},
		{
			name: "versions, device count and shutdown fail",
			lib: func() *mock.Interface {
				lib := a100Box(2)
				lib.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
				lib.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_FUNCTION_NOT_FOUND }
				lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
				lib.ShutdownFunc = func() nvml.Return { return nvml.ERROR_UNINITIALIZED }
				return lib
			},
			want: func() Capacity {
				c := gpuNode()
				c.DriverVersion, c.CUDADriverVersion, c.Note = "", "", noteNoGPUs
				c.Warnings = []string{
					"driver version: ERROR_NOT_SUPPORTED",
					"CUDA driver version: ERROR_FUNCTION_NOT_FOUND",
					"count GPUs: ERROR_UNKNOWN",
					"nvml shutdown: ERROR_UNINITIALIZED",
				}
				return c
			}(),
			wantErrs:      []error{nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND, nvml.ERROR_UNKNOWN, nvml.ERROR_UNINITIALIZED},
			wantShutdowns: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := tt.lib()
			got, err := discover(lib, testHost)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("capacity:\n got %s\nwant %s", jsonString(t, got), jsonString(t, tt.want))
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Errorf("error = %v, want nil", err)
			}
			for _, target := range tt.wantErrs {
				if !errors.Is(err, target) {
					t.Errorf("error %v does not match %v", err, target)
				}
			}
			if n := len(lib.InitCalls()); n != 1 {
				t.Errorf("Init called %d times, want 1", n)
			}
			if n := len(lib.ShutdownCalls()); n != tt.wantShutdowns {
				t.Errorf("Shutdown called %d times, want %d", n, tt.wantShutdowns)
			}
		})
	}
}

func TestCUDAVersion(t *testing.T) {
	for v, want := range map[int]string{12040: "12.4", 11080: "11.8", 12000: "12.0", 9020: "9.2", 0: "", -1: ""} {
		if got := cudaVersion(v); got != want {
			t.Errorf("cudaVersion(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestMIGProfile(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA A100-SXM4-40GB MIG 3g.20gb":  "3g.20gb",
		"NVIDIA H100 80GB HBM3 MIG 1g.10gb":  "1g.10gb",
		"NVIDIA A30 MIG 1g.6gb+me":           "1g.6gb+me",
		"NVIDIA A100-SXM4-40GB":              "",
		"":                                   "",
		"NVIDIA H100 80GB HBM3 MIG 7g.80gb ": "7g.80gb",
	} {
		if got := migProfile(name); got != want {
			t.Errorf("migProfile(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestDiscoverReadsThisHost checks that the exported Discover reads the real
// host next to the given NVML.
func TestDiscoverReadsThisHost(t *testing.T) {
	c, err := Discover(failingInit(nvml.ERROR_LIBRARY_NOT_FOUND))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	hostname, _ := os.Hostname()
	if c.Hostname != hostname || c.CPUCores != runtime.NumCPU() {
		t.Errorf("host = %q, %d cores; want %q, %d", c.Hostname, c.CPUCores, hostname, runtime.NumCPU())
	}
	if runtime.GOOS == "linux" && (c.MemoryTotalMB == 0 || c.MemoryAvailableMB > c.MemoryTotalMB) {
		t.Errorf("memory = %d MiB available of %d", c.MemoryAvailableMB, c.MemoryTotalMB)
	}
	if len(c.Tools) != len(toolNames) {
		t.Errorf("tools = %+v, want one per %v", c.Tools, toolNames)
	}
}

// TestDiscoverSystem runs the real go-nvml. On a machine without
// libnvidia-ml.so.1 (the CI machines) it must report a CPU node, neither
// panicking nor ending the process; on a GPU machine it lists the GPUs.
func TestDiscoverSystem(t *testing.T) {
	c, err := DiscoverSystem()
	if !c.NvidiaDriver {
		if err != nil {
			t.Errorf("error = %v, want nil on a machine without a driver", err)
		}
		if c.Note != noteNoLibrary && c.Note != noteNoDriver {
			t.Errorf("note = %q, want the no-driver note", c.Note)
		}
		if c.GPUs == nil || len(c.GPUs) != 0 || c.DriverVersion != "" {
			t.Errorf("CPU node reports GPUs %v, driver %q", c.GPUs, c.DriverVersion)
		}
		return
	}
	t.Logf("NVIDIA driver found:\n%s", FormatCapacity(c))
	if err != nil {
		t.Errorf("error = %v", err)
	}
	if c.DriverVersion == "" || c.CUDADriverVersion == "" {
		t.Errorf("driver %q, CUDA %q: want both", c.DriverVersion, c.CUDADriverVersion)
	}
	for _, g := range c.GPUs {
		if g.Error != "" || g.UUID == "" || g.MemoryTotalMB == 0 || g.MemoryFreeMB > g.MemoryTotalMB {
			t.Errorf("GPU %+v", g)
		}
	}
}
