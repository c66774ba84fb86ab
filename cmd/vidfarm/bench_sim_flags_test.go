package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/bench"
)

// TestBenchSimRefusesBeforeRunning: flags that would be ignored or
// silently reinterpreted, and an -svg the chart cannot be written to, are
// refused before anything is simulated, each naming the flag; no chart
// file is left behind.
func TestBenchSimRefusesBeforeRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	fleet, workload := filepath.Join("..", "..", "bench", "examples", "fleet.yaml"), filepath.Join("..", "..", "bench", "examples", "workload.yaml")
	one := filepath.Join(dir, "one.svg")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"sweep step 0", []string{"--sweep", "h100", "--sweep-step", "0", "--target-p95", "30"}, "-sweep-step must be >= 1, got 0"},
		{"explicit target 0", []string{"--sweep", "h100", "--target-p95", "0"}, "-target-p95 must be > 0 seconds, got 0"},
		{"since without a farm", []string{"--since", "1h"}, "-since applies only with -from-farm"},
		{"twin-out without a farm", []string{"--twin-out", dir}, "-twin-out applies only with -from-farm"},
		{"admin token without a farm", []string{"--admin-token", "x"}, "-admin-token applies only with -from-farm"},
		{"a group twice", []string{"--add-nodes", "h100=1,h100=2"}, `-add-nodes: group "h100" given twice`},
		{"svg in no directory", []string{"--svg", "/nonexistent/dir/x.svg"}, "-svg /nonexistent/dir/x.svg: the chart cannot be written there"},
		{"svg is a directory", []string{"--svg", dir}, "is a directory"},
		{"a sweep chart of one size", []string{"--sweep", "h100", "--sweep-min", "5", "--sweep-max", "5", "--target-p95", "30", "--svg", one},
			"a sweep chart needs at least two sizes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "sim", "--fleet", fleet, "--workload", workload, "--hours", "48"}, tc.args...)
			cmd := exec.Command(vidfarmBinary(t), args...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if err == nil || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("err %v, stderr %q, want an error saying %q", err, errOut.String(), tc.want)
			}
			// Refused before simulating: no progress bar, no report.
			if strings.Contains(errOut.String(), "simulating") || strings.Contains(errOut.String(), "sweeping") || out.Len() > 0 {
				t.Fatalf("ran before refusing: stdout %q stderr %q", out.String(), errOut.String())
			}
		})
	}
	if _, err := os.Stat(one); !os.IsNotExist(err) {
		t.Errorf("a refused chart left %s: %v", one, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".vidfarm-svg-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestBenchSimShortRunAndChartAfterReport: a run of 0.001 h says how long
// it simulated, and the report reaches stdout with the chart written
// whole next to it.
func TestBenchSimShortRunAndChartAfterReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "t.svg")
	fleet, workload := filepath.Join("..", "..", "bench", "examples", "fleet.yaml"), filepath.Join("..", "..", "bench", "examples", "workload.yaml")
	cmd := exec.Command(vidfarmBinary(t), "bench", "sim", "--fleet", fleet, "--workload", workload, "--hours", "0.001", "--replications", "1", "--svg", svg)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "simulated 3.6s in ") || !strings.HasPrefix(out.String(), "simulated 3.6s (seed 1)") {
		t.Fatalf("stderr %q\nstdout %.200q", errOut.String(), out.String())
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(b, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</svg>")) {
		t.Fatalf("chart: %v %.80q", err, b)
	}
	if fi, err := os.Stat(svg); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("chart mode: %v %v", fi.Mode(), err)
	}
}

func TestGroupCounts(t *testing.T) {
	fleet := bench.Fleet{Groups: []bench.NodeGroup{{Name: "h100"}, {Name: "l40s"}}}
	cases := []struct {
		in      string
		want    map[string]int
		wantErr string
	}{
		{"", nil, ""},
		{"2", map[string]int{"h100": 2, "l40s": 2}, ""},
		{"h100=1, l40s=-1", map[string]int{"h100": 1, "l40s": -1}, ""},
		{"h100=1,h100=2", nil, `group "h100" given twice`},
		{"h100", nil, "want N or group=N"},
	}
	for _, tc := range cases {
		got, err := groupCounts(fleet, "-add-nodes", tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

func TestFmtHours(t *testing.T) {
	for in, want := range map[float64]string{0.001: "3.6s", 0.5: "30m0s", 1: "1 h", 2.25: "2.25 h", 48: "48 h"} {
		if got := fmtHours(in); got != want {
			t.Errorf("fmtHours(%v) = %q, want %q", in, got, want)
		}
	}
}
