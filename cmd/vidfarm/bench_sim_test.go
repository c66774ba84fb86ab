package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/bench"
)

// TestBenchSimCLI runs `vidfarm bench sim` on the shipped examples: CSV on
// stdout and an SVG, then a sweep as JSON, then inputs it must refuse.
func TestBenchSimCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	var runEnv func(env []string, args ...string) (string, string, error)
	run := func(args ...string) (string, string, error) {
		return runEnv(nil, args...)
	}
	runEnv = func(env []string, args ...string) (string, string, error) {
		cmd := exec.Command(vidfarmBinary(t), append([]string{"bench", "sim"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	fleet, workload := filepath.Join("..", "..", "bench", "examples", "fleet.yaml"), filepath.Join("..", "..", "bench", "examples", "workload.yaml")
	svg := filepath.Join(dir, "timeline.svg")
	out, errOut, err := run("--fleet", fleet, "--workload", workload, "--hours", "2", "--format", "csv", "--svg", svg)
	if err != nil {
		t.Fatalf("bench sim: %v\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, "scope,name,metric,value,ci_low,ci_high\n") || !strings.Contains(out, "class,enterprise,slo_gpu_wait_le_60s_attained,") {
		t.Fatalf("CSV:\n%.600s", out)
	}
	if !strings.Contains(errOut, "simulating 2 h × 10 seeds: 100%") {
		t.Errorf("not 10 replications by default: stderr\n%s", errOut)
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
		t.Fatalf("SVG: %v %.100s", err, b)
	}

	// One replication is the single run of old; the same seed and
	// replications give the same report on one core or two.
	out, errOut, err = run("--fleet", fleet, "--workload", workload, "--hours", "2", "--replications", "1", "--format", "csv")
	if err != nil || !strings.HasPrefix(out, "scope,name,metric,value\nfarm,,hours,2\n") || !strings.Contains(errOut, "simulating 2 h: 100%") {
		t.Fatalf("--replications 1: %v\n%.200s\n%s", err, out, errOut)
	}
	var tables []string
	for _, procs := range []string{"1", "2"} {
		out, errOut, err := runEnv([]string{"GOMAXPROCS=" + procs}, "--fleet", fleet, "--workload", workload, "--hours", "1", "--replications", "3")
		if err != nil {
			t.Fatalf("GOMAXPROCS=%s: %v\n%s", procs, err, errOut)
		}
		tables = append(tables, out)
	}
	if tables[0] != tables[1] || !strings.Contains(tables[0], "3 seeds from 1") {
		t.Fatalf("GOMAXPROCS 1 and 2 differ, or no seed count:\n%s\n%s", tables[0], tables[1])
	}

	out, errOut, err = run("--fleet", fleet, "--workload", workload, "--hours", "2", "--format", "json",
		"--sweep", "cpu", "--sweep-min", "1", "--sweep-max", "2", "--target-p95", "600")
	if err != nil {
		t.Fatalf("bench sim --sweep: %v\n%s", err, errOut)
	}
	var res bench.SweepResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Points) != 2 || res.Group != "cpu" ||
		res.Replications != 10 || res.Points[0].CI == nil || res.Points[0].Verdict == "" {
		t.Fatalf("sweep JSON (%v):\n%s", err, out)
	}

	// The mix example: a sweep by every class's SLOs, then the cost
	// optimizer, both as JSON.
	mixFleet, mixWorkload := filepath.Join("..", "..", "bench", "examples", "fleet-mix.yaml"), filepath.Join("..", "..", "bench", "examples", "workload-mix.yaml")
	out, errOut, err = run("--fleet", mixFleet, "--workload", mixWorkload, "--hours", "2", "--replications", "2", "--format", "json",
		"--sweep", "l40s", "--sweep-min", "1", "--sweep-max", "2")
	if err != nil {
		t.Fatalf("bench sim --sweep by class: %v\n%s", err, errOut)
	}
	res = bench.SweepResult{}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.ByClass || len(res.Points) != 2 || len(res.Points[0].Classes) != 3 {
		t.Fatalf("sweep by class JSON (%v):\n%.2000s", err, out)
	}
	out, errOut, err = run("--fleet", mixFleet, "--workload", mixWorkload, "--hours", "2", "--replications", "2", "--format", "json",
		"--optimize", "cost", "--optimize-max", "h100=1,l40s=2,a10=1")
	if err != nil {
		t.Fatalf("bench sim --optimize cost: %v\n%s", err, errOut)
	}
	var opt bench.OptimizeResult
	if err := json.Unmarshal([]byte(out), &opt); err != nil || opt.Currency != "USD" || opt.Candidates != 11 || len(opt.Tried) == 0 ||
		len(opt.Groups) != 3 || opt.Groups[1].Max != 2 || len(opt.Tried[0].ClassCosts) != 3 {
		t.Fatalf("optimize JSON (%v):\n%.2000s", err, out)
	}
	out, errOut, err = run("--fleet", mixFleet, "--workload", mixWorkload, "--hours", "2", "--replications", "1",
		"--optimize", "cost", "--optimize-max", "1")
	if err != nil || !strings.Contains(out, "cost/h USD") || !strings.Contains(errOut, "fleets in") {
		t.Fatalf("optimize table: %v\n%s\n%s", err, out, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fleet", fleet}, "-fleet and -workload are required"},
		{[]string{"--fleet", fleet, "--workload", workload, "--format", "xml"}, "-format must be table, json or csv"},
		{[]string{"--fleet", fleet, "--workload", workload, "--sweep", "h100", "--svg", svg}, "a sweep by class SLOs has no chart"},
		{[]string{"--fleet", fleet, "--workload", workload, "--optimize", "speed"}, "-optimize must be cost"},
		{[]string{"--fleet", fleet, "--workload", workload, "--optimize", "cost", "--optimize-max", "h100:3"}, "-optimize-max: want N or group=N"},
		{[]string{"--fleet", fleet, "--workload", workload, "--sweep", "b200", "--target-p95", "60"}, `sweep.group: no node group named "b200"`},
		{[]string{"--fleet", workload, "--workload", workload}, "unknown field"},
		{[]string{"--fleet", fleet, "--workload", workload, "--replications", "-2"}, "replications: must be 1 to 1000"},
		{[]string{"--fleet", fleet, "--workload", workload, "--replications", "0"}, "replications: must be 1 to 1000"},
		// A mode's flags without the mode would be ignored: the plain run's
		// report would pass for the answer to the question they asked.
		{[]string{"--fleet", fleet, "--workload", workload, "--target-p95", "100"}, "-target-p95 applies only with -sweep"},
		{[]string{"--fleet", fleet, "--workload", workload, "--sweep-min", "3"}, "-sweep-min applies only with -sweep"},
		{[]string{"--fleet", fleet, "--workload", workload, "--optimize-max", "3"}, "-optimize-max applies only with -optimize"},
	} {
		if _, errOut, err := run(tc.args...); err == nil || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: err %v, stderr %q, want it to say %q", tc.args, err, errOut, tc.want)
		}
	}
}

// TestBenchSimRefusesUnrunnableAndSaysNoData: a workload asking for a
// model no group of the fleet can run is refused before simulating, with
// the model, what it needs and the fleet's GPU kinds; an SLO on videos the
// workload never makes reads "no data", not "met", in one run and in
// several.
func TestBenchSimRefusesUnrunnableAndSaysNoData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(vidfarmBinary(t), append([]string{"bench", "sim"}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	a10 := filepath.Join(dir, "a10.yaml")
	if err := os.WriteFile(a10, []byte(`gpu_speed: {A10: 0.25}
groups:
  - {name: a10, gpu_model: A10, count: 4, gpus_per_node: 1, gpu_memory_gb: 24, cpu_slots: 8, cost_per_hour: 0.6}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	examples := filepath.Join("..", "..", "bench", "examples")
	for _, args := range [][]string{
		{"--fleet", a10, "--workload", filepath.Join(examples, "workload-mix.yaml"), "--hours", "1"},
		{"--fleet", a10, "--workload", filepath.Join(examples, "workload-mix.yaml"), "--hours", "1", "--sweep", "a10", "--target-p95", "60"},
		{"--fleet", a10, "--workload", filepath.Join(examples, "workload-mix.yaml"), "--hours", "1", "--optimize", "cost"},
	} {
		out, errOut, err := run(args...)
		want := []string{"workload.manual[0].model: no node group of the fleet can run seedance-1.0-lite at 720p",
			"1 GPU with at least 36 GB each on one node", "a10: 1 × A10 with 24 GB"}
		for _, w := range want {
			if err == nil || !strings.Contains(errOut, w) {
				t.Errorf("%v: err %v, stderr %q, want it to say %q", args, err, errOut, w)
			}
		}
		if out != "" || strings.Contains(errOut, "simulating") {
			t.Errorf("%v: simulated before refusing: stdout %q, stderr %q", args, out, errOut)
		}
	}

	// workload-mix.yaml makes manual videos only; its SLO applies to the
	// auto mode too, which has nothing to measure.
	mix := []string{"--fleet", filepath.Join(examples, "fleet-mix.yaml"), "--workload", filepath.Join(examples, "workload-mix.yaml"), "--hours", "1"}
	for _, repl := range []string{"1", "3"} {
		out, errOut, err := run(append(mix, "--replications", repl)...)
		if err != nil {
			t.Fatalf("--replications %s: %v\n%s", repl, err, errOut)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "mode auto") && strings.Contains(l, "turnaround <=") {
				line = l
			}
		}
		if !strings.HasSuffix(line, "(target 90.00%)  no data") {
			t.Errorf("--replications %s: auto's SLO line %q, want no data", repl, line)
		}
	}
}
