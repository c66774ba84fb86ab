package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSimOutputsAndTimeline(t *testing.T) {
	fleet, wl := loadExamples(t)
	wl.SLOs = []SLO{{Metric: MetricGPUWait, Seconds: 120}, {Metric: MetricTurnaround, Seconds: 1}}
	wl.Accounts[0].SLOs = []SLO{{Metric: MetricWait, Seconds: 1e6, Target: 0.999}}
	run := func() (SimReport, []byte, []byte) {
		c := SimConfig{Hours: 12, Seed: 7}
		rep, err := Simulate(fleet, wl, c)
		if err != nil {
			t.Fatal(err)
		}
		var csvOut, svg bytes.Buffer
		if err := rep.WriteCSV(&csvOut); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteSVG(&svg); err != nil {
			t.Fatal(err)
		}
		return rep, csvOut.Bytes(), svg.Bytes()
	}
	rep, csv1, svg1 := run()
	_, csv2, svg2 := run()
	if !bytes.Equal(csv1, csv2) || !bytes.Equal(svg1, svg2) {
		t.Fatal("same seed, different CSV or SVG")
	}
	checkSVG(t, svg1, "GPU wait p95", "GPU utilisation", "CPU utilisation")

	// SLOs: a turnaround of 1 s is never met; a wait of 11 days always is.
	all := rep.Overall.SLOs
	if len(all) != 2 || all[0].Metric != MetricGPUWait || all[1].Met || all[1].Attained != 0 || all[1].Target != 0.95 {
		t.Fatalf("overall SLOs %+v", all)
	}
	if ent := rep.Accounts[0].SLOs; len(ent) != 1 || !ent[0].Met || ent[0].Attained != 1 || ent[0].Count != rep.Accounts[0].Submitted {
		t.Fatalf("enterprise SLOs %+v (submitted %.0f)", ent, rep.Accounts[0].Submitted)
	}
	if len(rep.Accounts[1].SLOs) != 2 {
		t.Fatalf("pro should inherit the workload's SLOs: %+v", rep.Accounts[1].SLOs)
	}

	// The timeline adds up to the whole run.
	if len(rep.Timeline) != 144 || rep.Timeline[1].StartHours != 5.0/60 {
		t.Fatalf("timeline of %d points starting %v, want 144 of 5 min", len(rep.Timeline), rep.Timeline[1].StartHours)
	}
	done, gpuBusy := 0.0, 0.0
	for _, p := range rep.Timeline {
		done += p.Completed
		gpuBusy += p.GPUUtilisation * p.Hours
		if p.GPUWaitP50 > p.GPUWaitP95 || p.GPUWaitP95 > p.GPUWaitP99 {
			t.Fatalf("percentiles out of order: %+v", p)
		}
	}
	if done != rep.Completed {
		t.Fatalf("timeline completes %.0f, report %.0f", done, rep.Completed)
	}
	if got := gpuBusy / rep.Hours; math.Abs(got-rep.GPUUtilisation) > 1e-6 {
		t.Fatalf("timeline GPU utilisation %v, report %v", got, rep.GPUUtilisation)
	}

	// The CSV holds the same figures.
	rows, err := csv.NewReader(bytes.NewReader(csv1)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows[1:] {
		got[r[0]+"/"+r[1]+"/"+r[2]] = r[3]
	}
	for key, want := range map[string]float64{
		"farm//completed":                              rep.Completed,
		"farm//gpu_utilisation":                        rep.GPUUtilisation,
		"class/free/gpu_wait_p95":                      rep.Accounts[2].GPUWait.P95,
		"all/all/slo_turnaround_le_1s_met":             0,
		"class/enterprise/slo_wait_le_1e+06s_attained": 1,
		"timeline/0.5/completed":                       rep.Timeline[6].Completed,
	} {
		v, err := strconv.ParseFloat(got[key], 64)
		if err != nil || math.Abs(v-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("CSV %s = %q, want %v", key, got[key], want)
		}
	}
}

func TestShippedExamplesDecode(t *testing.T) {
	fleet := mustDecodeFile(t, "examples/fleet.yaml", DecodeFleet)
	wl := mustDecodeFile(t, "examples/workload.yaml", DecodeWorkload)
	var calls int
	var last [2]time.Duration
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 1, Progress: func(done, total time.Duration) {
		calls++
		last = [2]time.Duration{done, total}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.GPUs != 376 || rep.Completed == 0 || len(rep.Accounts[0].SLOs) != 2 {
		t.Fatalf("example run: %d GPUs, %.0f completed, %+v", rep.GPUs, rep.Completed, rep.Accounts[0].SLOs)
	}
	if calls < 50 || last[0] != last[1] || last[1] != 2*time.Hour {
		t.Fatalf("progress: %d calls, last %v", calls, last)
	}
}

// TestTableMeanAndEmptyGroups: the table has a mean beside the
// percentiles, and a group without videos prints a dash, not zeros that
// read as instant service.
func TestTableMeanAndEmptyGroups(t *testing.T) {
	waits := Percentiles{Count: 4, Mean: 12.5, P50: 10, P95: 30, P99: 31}
	rep := SimReport{
		Hours: 1, Seed: 3,
		Overall: GroupStats{Name: "all", Submitted: 4, Completed: 4, Wait: waits, GPUWait: waits, Turnaround: waits},
		Modes: []GroupStats{{Name: "manual", Submitted: 4, Completed: 4, Wait: waits, GPUWait: waits, Turnaround: waits},
			{Name: "auto"}},
	}
	lines := strings.Split(rep.String(), "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in\n%s", prefix, rep.String())
		return ""
	}
	if h := find("group "); !strings.Contains(h, "wait s (mean / p50 / p95 / p99)") {
		t.Errorf("header %q has no mean", h)
	}
	if l := find("mode manual"); !strings.Contains(l, "12.5 / 10.0 / 30.0 / 31.0") {
		t.Errorf("manual row %q", l)
	}
	if l := find("mode auto"); strings.Contains(l, "0.0") || strings.Count(l, "—") != 3 {
		t.Errorf("empty auto row %q, want a dash for each measure", l)
	}
}

// TestGroupsWithoutSamples: a group with nothing measured has no numbers
// in any format (an empty CSV cell, no_data in the JSON, a dash in the
// table), in a run and in replications; and a class measured in only
// some replications has the mean of those, as though the others were
// not there, where it was averaged with their zeros.
func TestGroupsWithoutSamples(t *testing.T) {
	fleet, wl := mmcSetup(2, 0.5) // 30 manual videos an hour: mode auto has none
	wl.Accounts = []AccountClass{{Name: "big", Count: 10, Share: 0.97}, {Name: "rare", Count: 1, Share: 0.03}}
	cfg := SimConfig{Hours: 1, Seed: 1, Replications: 6}
	var measured []float64 // the rare class's p95 turnaround, in the runs that have one
	for i := range cfg.Replications {
		r, err := Simulate(fleet, wl, replicaConfig(cfg, i))
		if err != nil {
			t.Fatal(err)
		}
		if q := r.Accounts[1].Turnaround; q.Count > 0 {
			measured = append(measured, q.P95)
		} else if !q.NoData {
			t.Fatalf("seed %d: rare turnaround %+v has no sample and data", cfg.Seed+uint64(i), q)
		}
	}
	if len(measured) == 0 || len(measured) == cfg.Replications {
		t.Fatalf("the rare class finished videos in %d of %d runs; the test needs some, not all", len(measured), cfg.Replications)
	}
	want, _, _ := meanCI(measured)
	for _, repl := range []int{1, cfg.Replications} {
		c := cfg
		c.Replications = repl
		rep, err := Simulate(fleet, wl, c)
		if err != nil {
			t.Fatal(err)
		}
		out := outputs(t, rep)
		// Mode auto made no video in any run: nothing of it is a number.
		for _, m := range []string{"wait", "gpu_wait", "turnaround"} {
			for _, q := range []string{"mean", "p50", "p95", "p99", "max"} {
				row := "\nmode,auto," + m + "_" + q + ",\n"
				if repl > 1 {
					row = "\nmode,auto," + m + "_" + q + ",,,\n"
				}
				if !bytes.Contains(out["csv"], []byte(row)) {
					t.Errorf("%d replications: CSV lacks %q", repl, row[1:])
				}
			}
		}
		var js struct {
			Modes []struct {
				Wait struct {
					NoData bool `json:"no_data"`
				} `json:"wait"`
				GPUWait struct {
					NoData bool `json:"no_data"`
				} `json:"gpu_wait"`
				Turnaround struct {
					NoData bool `json:"no_data"`
				} `json:"turnaround"`
			}
		}
		if err := json.Unmarshal(out["json"], &js); err != nil {
			t.Fatal(err)
		}
		if a := js.Modes[1]; !a.Wait.NoData || !a.GPUWait.NoData || !a.Turnaround.NoData || js.Modes[0].Turnaround.NoData {
			t.Errorf("%d replications: JSON modes %+v, want no_data for auto's measures only", repl, js.Modes)
		}
		if repl == 1 {
			continue
		}
		rare := rep.Accounts[1].Turnaround
		if rare.NoData || math.Abs(rare.P95-want) > 1e-9 {
			t.Errorf("rare p95 turnaround %v (no data %v), want %v, the mean of the %d runs that measured it", rare.P95, rare.NoData, want, len(measured))
		}
		if e := rep.estimates()["class/rare/turnaround_p95"]; e.Runs != len(measured) || e.Mean != rare.P95 {
			t.Errorf("rare p95 turnaround estimate %+v, want of %d runs", e, len(measured))
		}
	}
}
