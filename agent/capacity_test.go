package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"testing"

	"github.com/vidfarm/vidfarm/pipeline"
)

const testMeminfo = `MemTotal:       65536000 kB
MemFree:         1024000 kB
MemAvailable:   32768000 kB
Buffers:          512000 kB
`

// testHost is a machine with 16 cores, 64000 MiB of RAM, ffmpeg and ffprobe
// but no espeak-ng.
var testHost = host{
	hostname: func() (string, error) { return "gpu-node-1", nil },
	numCPU:   func() int { return 16 },
	meminfo:  func() ([]byte, error) { return []byte(testMeminfo), nil },
	lookPath: func(file string) (string, error) {
		if file == "espeak-ng" {
			return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
		}
		return "/usr/bin/" + file, nil
	},
}

// cpuNode is the capacity discovery reports for testHost without GPUs.
func cpuNode(note string) Capacity {
	c := Capacity{
		Hostname: "gpu-node-1",
		CPUCores: 16,
		GPUs:     []GPU{},
		Tools: []Tool{
			{Name: "ffmpeg", Found: true, Path: "/usr/bin/ffmpeg"},
			{Name: "ffprobe", Found: true, Path: "/usr/bin/ffprobe"},
			{Name: "espeak-ng"},
		},
		Note: note,
	}
	if runtime.GOOS == "linux" {
		c.MemoryTotalMB, c.MemoryAvailableMB = 64000, 32000
	}
	return c
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDiscoverHost(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name         string
		change       func(h *host)
		want         func(c *Capacity)
		wantWarnings []string
		wantErr      error
	}{
		{name: "all readable", change: func(*host) {}, want: func(*Capacity) {}},
		{
			name:         "hostname fails",
			change:       func(h *host) { h.hostname = func() (string, error) { return "", errBoom } },
			want:         func(c *Capacity) { c.Hostname = "" },
			wantWarnings: []string{"hostname: boom"},
			wantErr:      errBoom,
		},
		{
			name:         "no /proc/meminfo",
			change:       func(h *host) { h.meminfo = func() ([]byte, error) { return nil, os.ErrNotExist } },
			want:         func(c *Capacity) { c.MemoryTotalMB, c.MemoryAvailableMB = 0, 0 },
			wantWarnings: []string{"host memory: file does not exist"},
			wantErr:      os.ErrNotExist,
		},
		{
			name: "ffmpeg too old for the pipeline",
			change: func(h *host) {
				h.checkTool = func(name, path string) error {
					if name == "ffmpeg" && path == "/usr/bin/ffmpeg" {
						return fmt.Errorf("%w: ffmpeg lacks filters gradients", pipeline.ErrToolUnfit)
					}
					return nil
				}
			},
			want: func(c *Capacity) {
				c.Tools[0].Problem = "pipeline: tool lacks features the pipeline uses: ffmpeg lacks filters gradients"
			},
		},
		{
			name: "tool found only in the working directory",
			change: func(h *host) {
				h.lookPath = func(file string) (string, error) {
					return "ffmpeg", &exec.Error{Name: file, Err: exec.ErrDot}
				}
			},
			want: func(c *Capacity) {
				for i := range c.Tools {
					c.Tools[i].Found, c.Tools[i].Path = false, ""
				}
			},
			wantWarnings: []string{
				`tool ffmpeg: exec: "ffmpeg": cannot run executable found relative to current directory`,
				`tool ffprobe: exec: "ffprobe": cannot run executable found relative to current directory`,
				`tool espeak-ng: exec: "espeak-ng": cannot run executable found relative to current directory`,
			},
			wantErr: exec.ErrDot,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if runtime.GOOS != "linux" && tt.name == "no /proc/meminfo" {
				t.Skip("meminfo is read on Linux only")
			}
			h := testHost
			tt.change(&h)
			want := cpuNode("")
			tt.want(&want)
			want.Warnings = tt.wantWarnings

			got, errs := discoverHost(h)
			got, err := finish(got, errs)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("capacity:\n got %s\nwant %s", jsonString(t, got), jsonString(t, want))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name                 string
		in                   string
		wantTotal, wantAvail uint64
		wantErr              bool
	}{
		{name: "linux", in: testMeminfo, wantTotal: 64000, wantAvail: 32000},
		{name: "rounds down", in: "MemTotal: 2047 kB\nMemAvailable: 1023 kB\n", wantTotal: 1, wantAvail: 0},
		{name: "no MemAvailable (kernel < 3.14)", in: "MemTotal: 2048 kB\nMemFree: 1024 kB\n", wantErr: true},
		{name: "unit other than kB", in: "MemTotal: 2048 MB\nMemAvailable: 1024 kB\n", wantErr: true},
		{name: "not a number", in: "MemTotal: lots kB\nMemAvailable: 1024 kB\n", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total, avail, err := parseMeminfo([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if total != tt.wantTotal || avail != tt.wantAvail {
				t.Errorf("= %d, %d MiB; want %d, %d", total, avail, tt.wantTotal, tt.wantAvail)
			}
		})
	}
}

func TestInstalledTools(t *testing.T) {
	if got, want := cpuNode("").InstalledTools(), []string{"ffmpeg", "ffprobe"}; !reflect.DeepEqual(got, want) {
		t.Errorf("InstalledTools() = %v, want %v", got, want)
	}
	if got := (Capacity{}).InstalledTools(); got != nil {
		t.Errorf("InstalledTools() of an empty capacity = %v, want nil", got)
	}
}

// TestInstalledToolsLeavesOutUnusable: a tool found on PATH but unfit for the
// pipeline is not advertised, so the node is offered no task that needs it.
func TestInstalledToolsLeavesOutUnusable(t *testing.T) {
	c := cpuNode("")
	if got, want := c.InstalledTools(), []string{"ffmpeg", "ffprobe"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("InstalledTools = %v, want %v", got, want)
	}
	c.Tools[0].Problem = "lacks filters gradients"
	if got, want := c.InstalledTools(), []string{"ffprobe"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with an unfit ffmpeg InstalledTools = %v, want %v", got, want)
	}
}
