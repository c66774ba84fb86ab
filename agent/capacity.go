package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
)

// ErrNVMLInit means libnvidia-ml.so.1 was found but NVML failed to initialise
// for a reason other than a missing driver (no permission, library and kernel
// driver versions that do not match, ...). The machine is reported as a CPU
// node; the error also wraps the nvml.Return.
var ErrNVMLInit = errors.New("NVML initialisation failed")

// Notes set in Capacity.Note when the machine is reported as a CPU node.
const (
	noteNoLibrary = "no NVIDIA driver found (libnvidia-ml.so.1 not loadable): running as a CPU node"
	noteNoDriver  = "NVIDIA driver not loaded (libnvidia-ml.so.1 found, but NVML reports no kernel driver): running as a CPU node"
	noteNoGPUs    = "NVIDIA driver found, but no GPU could be listed: running as a CPU node"
	noteNoCgo     = "built without cgo (CGO_ENABLED=0): NVML discovery unavailable, running as a CPU node"
)

// toolNames are the executables discovery looks for on PATH: the ones the
// pipeline drives.
var toolNames = []string{"ffmpeg", "ffprobe", "espeak-ng"}

// Capacity is what a node offers to the farm, as found by discovery. It is
// sent to the control plane and printed by "vidfarm agent --print-capacity".
// Memory figures are MiB (2^20 bytes), like nvidia-smi's.
type Capacity struct {
	Hostname string `json:"hostname"`
	CPUCores int    `json:"cpu_cores"` // runtime.NumCPU
	// MemoryTotalMB and MemoryAvailableMB are the host's RAM (MemTotal and
	// MemAvailable of /proc/meminfo); 0 where unknown.
	MemoryTotalMB     uint64 `json:"memory_total_mb"`
	MemoryAvailableMB uint64 `json:"memory_available_mb"`

	// NvidiaDriver is true when NVML initialised: the driver is installed
	// and loaded. When false the node is a CPU node and Note says why.
	NvidiaDriver      bool   `json:"nvidia_driver"`
	DriverVersion     string `json:"driver_version,omitempty"`      // e.g. "550.54.15"
	CUDADriverVersion string `json:"cuda_driver_version,omitempty"` // highest CUDA the driver supports, e.g. "12.4"
	GPUs              []GPU  `json:"gpus"`                          // never nil; empty on a CPU node

	Tools []Tool `json:"tools"` // ffmpeg, ffprobe, espeak-ng, in that order

	// Note is a human sentence on why the node has no GPUs, if it has none.
	Note string `json:"note,omitempty"`
	// Warnings is what discovery could not read (the text of the error it
	// returned), so that it reaches the control plane and the operator.
	Warnings []string `json:"warnings,omitempty"`
}

// GPU is one physical GPU as NVML sees it.
type GPU struct {
	Index         int    `json:"index"` // NVML index
	Name          string `json:"name"`  // e.g. "NVIDIA A100-SXM4-40GB"
	UUID          string `json:"uuid"`  // e.g. "GPU-5f0c..."
	MemoryTotalMB uint64 `json:"memory_total_mb"`
	MemoryFreeMB  uint64 `json:"memory_free_mb"`
	// UtilizationGPUPercent and UtilizationMemoryPercent are NVML's
	// utilisation rates over its last sample period; null where the GPU
	// does not report them (ERROR_NOT_SUPPORTED, MIG mode) or they could not
	// be read.
	UtilizationGPUPercent    *uint32 `json:"utilization_gpu_percent"`
	UtilizationMemoryPercent *uint32 `json:"utilization_memory_percent"`
	// TemperatureC is the GPU's die temperature in degrees Celsius (NVML's
	// TEMPERATURE_GPU sensor); null where the GPU does not report it or it
	// could not be read.
	TemperatureC *uint32 `json:"temperature_c,omitempty"`
	// PowerW is the board's power draw in watts (NVML's power usage); null
	// where the GPU does not report it or it could not be read.
	PowerW *float64 `json:"power_w,omitempty"`
	// MIGEnabled is the current MIG mode; false where the GPU has no MIG.
	// A GPU in MIG mode runs work only in its MIG instances.
	MIGEnabled   bool          `json:"mig_enabled"`
	MIGInstances []MIGInstance `json:"mig_instances,omitempty"`
	// Error is set when the UUID, memory or MIG layout of this GPU could not
	// be read: it is listed for the operator but must not be offered for work.
	Error string `json:"error,omitempty"`
}

// MIGInstance is one MIG device of a GPU in MIG mode.
type MIGInstance struct {
	Index         int    `json:"index"`             // MIG device index within its GPU
	UUID          string `json:"uuid"`              // e.g. "MIG-1c9d..."
	Name          string `json:"name"`              // e.g. "NVIDIA A100-SXM4-40GB MIG 3g.20gb"
	Profile       string `json:"profile,omitempty"` // from the name, e.g. "3g.20gb"
	MemoryTotalMB uint64 `json:"memory_total_mb"`
	MemoryFreeMB  uint64 `json:"memory_free_mb"`
	Error         string `json:"error,omitempty"` // as GPU.Error
}

// Tool is one executable looked up on PATH.
type Tool struct {
	Name  string `json:"name"`
	Found bool   `json:"found"`
	Path  string `json:"path,omitempty"` // absolute path when found
	// Problem says why a tool found on PATH cannot serve the pipeline (an
	// FFmpeg without a filter it uses). Such a tool is not advertised: the
	// node would lease tasks only to fail each of them.
	Problem string `json:"problem,omitempty"`
}

// usable reports whether the node can advertise t.
func (t Tool) usable() bool { return t.Found && t.Problem == "" }

// InstalledTools returns the names of the usable tools found on PATH, in the
// order of Capacity.Tools: what the node advertises to the scheduler.
func (c Capacity) InstalledTools() []string {
	var out []string
	for _, t := range c.Tools {
		if t.usable() {
			out = append(out, t.Name)
		}
	}
	return out
}

// host is what discovery reads from the machine apart from NVML. Tests
// replace it to get deterministic results.
type host struct {
	hostname func() (string, error)
	numCPU   func() int
	meminfo  func() ([]byte, error) // the contents of /proc/meminfo
	lookPath func(file string) (string, error)
	// checkTool asks a tool found at path whether it has what the pipeline
	// uses; nil or a nil error: it has.
	checkTool func(name, path string) error
}

var systemHost = host{
	hostname: os.Hostname,
	numCPU:   runtime.NumCPU,
	meminfo:  func() ([]byte, error) { return os.ReadFile("/proc/meminfo") },
	lookPath: exec.LookPath,
	checkTool: func(name, path string) error {
		if name != "ffmpeg" {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), toolCheckTimeout)
		defer cancel()
		return (&pipeline.Tools{FFmpeg: path}).CheckFFmpeg(ctx)
	},
}

// toolCheckTimeout bounds the start-up check of a tool: a wedged binary must
// not keep the agent from starting.
const toolCheckTimeout = 30 * time.Second

// discoverHost fills everything in a Capacity but the NVIDIA part, and returns
// what it could not read.
func discoverHost(h host) (Capacity, []error) {
	var errs []error
	c := Capacity{CPUCores: h.numCPU(), GPUs: []GPU{}, Tools: make([]Tool, 0, len(toolNames))}

	name, err := h.hostname()
	if err != nil {
		errs = append(errs, fmt.Errorf("hostname: %w", err))
	}
	c.Hostname = name

	if runtime.GOOS == "linux" {
		data, err := h.meminfo()
		if err == nil {
			c.MemoryTotalMB, c.MemoryAvailableMB, err = parseMeminfo(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("host memory: %w", err))
		}
	}

	for _, name := range toolNames {
		t := Tool{Name: name}
		path, err := h.lookPath(name)
		switch {
		case err == nil:
			t.Found, t.Path = true, path
			if h.checkTool != nil {
				if err := h.checkTool(name, path); err != nil {
					t.Problem = err.Error()
				}
			}
		case errors.Is(err, exec.ErrNotFound):
			// not installed: Found stays false
		default:
			// exec.ErrDot (found only relative to the working directory) and
			// the like: not used, but worth telling.
			errs = append(errs, fmt.Errorf("tool %s: %w", name, err))
		}
		c.Tools = append(c.Tools, t)
	}
	return c, errs
}

// parseMeminfo returns MemTotal and MemAvailable of a /proc/meminfo in MiB.
func parseMeminfo(data []byte) (totalMB, availableMB uint64, err error) {
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "MemTotal" && key != "MemAvailable") {
			continue
		}
		fields := strings.Fields(rest) // "32768000 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("meminfo: unexpected %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("meminfo: %s: %w", key, err)
		}
		if key == "MemTotal" {
			totalMB, haveTotal = kb>>10, true
		} else {
			availableMB, haveAvail = kb>>10, true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("meminfo: %w", err)
	}
	if !haveTotal || !haveAvail {
		return 0, 0, errors.New("meminfo: MemTotal or MemAvailable missing")
	}
	return totalMB, availableMB, nil
}

// finish records errs as the Capacity's warnings and returns them joined.
func finish(c Capacity, errs []error) (Capacity, error) {
	for _, err := range errs {
		c.Warnings = append(c.Warnings, err.Error())
	}
	return c, errors.Join(errs...)
}
