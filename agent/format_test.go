package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// migCapacity is a node with a plain GPU, a GPU in MIG mode with two
// instances and a lost GPU.
func migCapacity() Capacity {
	c := cpuNode("")
	c.MemoryTotalMB, c.MemoryAvailableMB = 64000, 32000
	c.NvidiaDriver, c.DriverVersion, c.CUDADriverVersion = true, "550.54.15", "12.4"
	c.GPUs = []GPU{
		{Index: 0, Name: "NVIDIA A100-SXM4-40GB", UUID: "GPU-a1000000-0000-0000-0000-000000000000",
			MemoryTotalMB: 40960, MemoryFreeMB: 40960, UtilizationGPUPercent: u32(37), UtilizationMemoryPercent: u32(12)},
		{Index: 1, Name: "NVIDIA A100-SXM4-40GB", UUID: "GPU-a1000000-0000-0000-0000-000000000001",
			MemoryTotalMB: 40960, MemoryFreeMB: 39936, MIGEnabled: true, MIGInstances: []MIGInstance{
				{Index: 0, UUID: "MIG-11111111-0000-0000-0000-000000000000", Name: "NVIDIA A100-SXM4-40GB MIG 3g.20gb", Profile: "3g.20gb", MemoryTotalMB: 19968, MemoryFreeMB: 19000},
				{Index: 3, Error: "get handle: ERROR_UNKNOWN"},
			}},
		{Index: 2, Error: "get handle: ERROR_GPU_IS_LOST"},
	}
	c.Warnings = []string{"gpu 1: MIG device 3: get handle: ERROR_UNKNOWN", "gpu 2: get handle: ERROR_GPU_IS_LOST"}
	return c
}

func u32(v uint32) *uint32 { return &v }

func TestFormatCapacity(t *testing.T) {
	tests := []struct {
		name string
		c    Capacity
		want string
	}{
		{
			name: "CPU node",
			c:    cpuNode(noteNoLibrary),
			want: `host           gpu-node-1
cpu cores      16
memory         64000 MiB total, 32000 MiB available
nvidia driver  none
tools          ffmpeg (/usr/bin/ffmpeg), ffprobe (/usr/bin/ffprobe), espeak-ng (missing)
note           no NVIDIA driver found (libnvidia-ml.so.1 not loadable): running as a CPU node
`,
		},
		{
			name: "GPUs, MIG and a lost GPU",
			c:    migCapacity(),
			want: `host           gpu-node-1
cpu cores      16
memory         64000 MiB total, 32000 MiB available
nvidia driver  550.54.15 (CUDA 12.4)
tools          ffmpeg (/usr/bin/ffmpeg), ffprobe (/usr/bin/ffprobe), espeak-ng (missing)

GPU  NAME                   UUID                                      MEMORY FREE/TOTAL  UTIL GPU/MEM  MIG              STATUS
0    NVIDIA A100-SXM4-40GB  GPU-a1000000-0000-0000-0000-000000000000  40960/40960 MiB    37%/12%       off              ok
1    NVIDIA A100-SXM4-40GB  GPU-a1000000-0000-0000-0000-000000000001  39936/40960 MiB    n/a           on, 2 instances  ok
1/0    MIG 3g.20gb          MIG-11111111-0000-0000-0000-000000000000  19000/19968 MiB    -                              ok
1/3    MIG -                -                                         -                  -                              unusable: get handle: ERROR_UNKNOWN
2    -                      -                                         -                  n/a           -                unusable: get handle: ERROR_GPU_IS_LOST

warnings:
  gpu 1: MIG device 3: get handle: ERROR_UNKNOWN
  gpu 2: get handle: ERROR_GPU_IS_LOST
`,
		},
		{
			name: "an FFmpeg that lacks a filter",
			c: func() Capacity {
				c := cpuNode("")
				c.Tools[0].Problem = "ffmpeg lacks filters gradients"
				return c
			}(),
			want: `host           gpu-node-1
cpu cores      16
memory         64000 MiB total, 32000 MiB available
nvidia driver  none
tools          ffmpeg (unusable: ffmpeg lacks filters gradients), ffprobe (/usr/bin/ffprobe), espeak-ng (missing)
`,
		},
		{
			name: "nothing known",
			c:    Capacity{},
			want: `host           -
cpu cores      0
memory         unknown
nvidia driver  none
tools          -
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatCapacity(tt.c); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			var b bytes.Buffer
			if err := PrintCapacity(&b, tt.c, false); err != nil || b.String() != tt.want {
				t.Errorf("PrintCapacity = %v, %q; want the table", err, b.String())
			}
		})
	}
}

func TestPrintCapacityJSON(t *testing.T) {
	for _, c := range []Capacity{cpuNode(noteNoLibrary), migCapacity()} {
		var b bytes.Buffer
		if err := PrintCapacity(&b, c, true); err != nil {
			t.Fatal(err)
		}
		var back Capacity
		if err := json.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatalf("%v in %s", err, b.String())
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("round trip:\n got %+v\nwant %+v", back, c)
		}
	}

	// The wire shape: a CPU node lists no GPUs as [], unknown utilisation is null.
	var b bytes.Buffer
	if err := PrintCapacity(&b, migCapacity(), true); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		GPUs []map[string]any `json:"gpus"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if v, ok := raw.GPUs[1]["utilization_gpu_percent"]; !ok || v != nil {
		t.Errorf("utilization_gpu_percent of a MIG GPU = %v (present %v), want null", v, ok)
	}
	if v := raw.GPUs[0]["utilization_gpu_percent"]; v != 37.0 {
		t.Errorf("utilization_gpu_percent = %v, want 37", v)
	}
	b.Reset()
	if err := PrintCapacity(&b, cpuNode(noteNoLibrary), true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(`"gpus": [],`)) || !bytes.Contains(b.Bytes(), []byte(`"nvidia_driver": false,`)) {
		t.Errorf("CPU node JSON:\n%s", b.String())
	}
}

var errWrite = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestPrintCapacityWriteError(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		if err := PrintCapacity(failingWriter{}, cpuNode(""), asJSON); !errors.Is(err, errWrite) {
			t.Errorf("asJSON=%v: error = %v, want %v", asJSON, err, errWrite)
		}
	}
}
