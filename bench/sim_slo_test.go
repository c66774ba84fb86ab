package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// TestAttainmentOfNothingIsNotMet: an SLO measured on no video is
// neither met nor missed; pending misses are measures.
func TestAttainmentOfNothingIsNotMet(t *testing.T) {
	slo := SLO{Metric: MetricTurnaround, Seconds: 60, Target: 0.9}
	for _, tc := range []struct {
		name     string
		waits    []time.Duration
		pending  int
		noData   bool
		met      bool
		attained float64
	}{
		{"nothing measured", nil, 0, true, false, 0},
		{"all within", []time.Duration{time.Second, 59 * time.Second}, 0, false, true, 1},
		{"one of two late", []time.Duration{time.Second, 61 * time.Second}, 0, false, false, 0.5},
		{"only pending misses", nil, 3, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s samples
			for _, w := range tc.waits {
				s.add(w)
			}
			sortSamples([]*samples{&s})
			r := attainment(slo, &s, tc.pending)
			if r.NoData != tc.noData || r.Met != tc.met || r.Attained != tc.attained {
				t.Errorf("attainment = %+v, want no_data %v met %v attained %v", r, tc.noData, tc.met, tc.attained)
			}
		})
	}
}

// noDataWorkload is manual videos only, on one H100, with SLOs on the
// auto videos it never makes (the workload's, so mode auto has them too).
func noDataWorkload() (Fleet, Workload) {
	fleet, wl := mmcSetup(2, 0.5)
	wl.ExponentialService = false
	wl.SLOs = []SLO{{Metric: MetricTurnaround, Seconds: 900, Target: 0.9}}
	return fleet, wl
}

// TestSLOWithoutSamplesReportsNoData: a plain run, one and several
// replications, says "no data" for the SLO of a group with no videos in
// every format, and never "met".
func TestSLOWithoutSamplesReportsNoData(t *testing.T) {
	fleet, wl := noDataWorkload()
	for _, repl := range []int{1, 3} {
		rep, err := Simulate(fleet, wl, SimConfig{Hours: 4, Seed: 1, Replications: repl})
		if err != nil {
			t.Fatal(err)
		}
		auto := rep.Modes[1]
		if auto.Name != "auto" || auto.Submitted != 0 {
			t.Fatalf("mode %q has %.0f videos", auto.Name, auto.Submitted)
		}
		if o := auto.SLOs[0]; !o.NoData || o.Met || o.Count != 0 {
			t.Errorf("%d replications: auto's SLO %+v, want no data, not met", repl, o)
		}
		if o := rep.Modes[0].SLOs[0]; o.NoData || !o.Met {
			t.Errorf("%d replications: manual's SLO %+v, want measured and met", repl, o)
		}
		table := rep.String()
		var line string
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, "mode auto ") && strings.Contains(l, "turnaround <=") {
				line = l
			}
		}
		if !strings.HasSuffix(line, " no data") || strings.Contains(line, "100.00%") {
			t.Errorf("%d replications: auto's SLO line %q, want it to end in no data", repl, line)
		}
		var csv bytes.Buffer
		if err := rep.WriteCSV(&csv); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"mode,auto,slo_turnaround_le_900s_attained,\n", "mode,auto,slo_turnaround_le_900s_met,0"} {
			if repl > 1 {
				want = strings.Replace(want, ",\n", ",,,\n", 1)
			}
			if !strings.Contains(csv.String(), want) {
				t.Errorf("%d replications: CSV lacks %q", repl, want)
			}
		}
	}
}

// TestCombineAveragesOnlyMeasuredRuns: replications in which an SLO had
// nothing to measure do not pull its mean attainment toward 0 (or 1);
// when none measured it, it has no data and no interval.
func TestCombineAveragesOnlyMeasuredRuns(t *testing.T) {
	slo := SLO{Metric: MetricGPUWait, Seconds: 60, Target: 0.9}
	run := func(count int, attained float64) SimReport {
		o := SLOResult{SLO: slo, Count: float64(count), Attained: attained, Met: count > 0 && attained >= 0.9, NoData: count == 0}
		return SimReport{Hours: 1, Overall: GroupStats{Name: "all", SLOs: []SLOResult{o}}}
	}
	for _, tc := range []struct {
		name   string
		reps   []SimReport
		mean   float64
		noData bool
	}{
		{"all measured", []SimReport{run(10, 0.9), run(10, 1), run(10, 0.95)}, 0.95, false},
		{"one measured nothing", []SimReport{run(10, 0.9), run(0, 0), run(10, 1)}, 0.95, false},
		{"none measured", []SimReport{run(0, 0), run(0, 0)}, 0, true},
		{"one measured", []SimReport{run(0, 0), run(10, 1), run(0, 0)}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := combine(tc.reps)
			o := c.Overall.SLOs[0]
			if math.Abs(o.Attained-tc.mean) > 1e-12 || o.NoData != tc.noData || (tc.noData && o.Met) {
				t.Errorf("combined %+v, want attained %v, no data %v", o, tc.mean, tc.noData)
			}
			e, hasCI := c.estimates()["all/all/"+sloKey(slo)+"_attained"]
			if hasCI == tc.noData {
				t.Errorf("interval present: %v, want %v", hasCI, !tc.noData)
			}
			// One run has no interval: whatever its attainment, the
			// verdict is uncertain.
			if v := verdict(e, slo.Target); e.oneRun() && (v != "uncertain" || !strings.Contains(c.String(), "100.00% (1 run)  of 3 ")) {
				t.Errorf("one run measured the SLO: verdict %q, table\n%s", v, c.String())
			}
		})
	}
}

// TestSweepAndOptimizeDoNotCountNoDataAsMet: sizes and fleets whose SLOs
// measured nothing (a run too short for any video to finish) are no
// answer: not met, verdict "no data", and the table says why.
func TestSweepAndOptimizeDoNotCountNoDataAsMet(t *testing.T) {
	fleet, wl := noDataWorkload()
	// seedance 480p, 5 s: 60 s on an H100, so nothing finishes in 36 s,
	// and nothing pending has waited the SLOs' 900 s.
	for _, repl := range []int{1, 3} {
		cfg := SimConfig{Hours: 0.01, Seed: 1, Replications: repl}
		for _, sc := range []SweepConfig{
			{Group: "h100", Min: 1, Max: 3, Metric: MetricTurnaround, TargetP95: 900},
			{Group: "h100", Min: 1, Max: 3}, // by class SLOs
		} {
			res, err := Sweep(fleet, wl, cfg, sc)
			if err != nil {
				t.Fatal(err)
			}
			if res.Found {
				t.Errorf("%d replications, target %v: found %d on no data", repl, sc.TargetP95, res.Smallest)
			}
			for _, p := range res.Points {
				if p.Met || p.Verdict != VerdictNoData {
					t.Errorf("%d replications, target %v: size %d met %v verdict %q, want no data", repl, sc.TargetP95, p.Count, p.Met, p.Verdict)
				}
			}
			if out := res.String(); !strings.Contains(out, "no data at 1, 2 and 3") || strings.Contains(out, "meets\n") {
				t.Errorf("%d replications, target %v: table\n%s", repl, sc.TargetP95, out)
			}
		}
		res, err := Optimize(fleet, wl, cfg, OptimizeConfig{Max: map[string]int{"h100": 2}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Found || len(res.Tried) != 2 {
			t.Errorf("%d replications: optimize found %v after %d tried", repl, res.Found, len(res.Tried))
		}
		for _, c := range res.Tried {
			if c.Verdict != VerdictNoData || !c.Classes[0].SLOs[0].NoData {
				t.Errorf("%d replications: candidate %v verdict %q", repl, c.Counts, c.Verdict)
			}
		}
		if out := res.String(); !strings.Contains(out, "no fleet in the ranges is known to meet") || strings.Contains(out, "raise the maxima") {
			t.Errorf("%d replications: optimize table\n%s", repl, out)
		}
	}
}

// TestBindingSLO: the least margin among measured SLOs binds; one that
// measured nothing binds unless another certainly misses.
func TestBindingSLO(t *testing.T) {
	check := func(attained, target float64, noData bool) SLOCheck {
		return SLOCheck{SLO: SLO{Metric: MetricGPUWait, Seconds: 60, Target: target}, Attained: attained, NoData: noData}
	}
	for _, tc := range []struct {
		name    string
		slos    []SLOCheck
		verdict string
		want    int
	}{
		{"least margin", []SLOCheck{check(0.99, 0.95, false), check(0.96, 0.95, false)}, VerdictMeets, 1},
		{"no data binds", []SLOCheck{check(0.5, 0.95, false), check(0, 0.9, true)}, VerdictNoData, 1},
		{"a miss binds over no data", []SLOCheck{check(0, 0.9, true), check(0.5, 0.95, false)}, VerdictMisses, 1},
		{"all without data", []SLOCheck{check(0, 0.9, true), check(0, 0.9, true)}, VerdictNoData, 0},
	} {
		if got := binding(tc.slos, tc.verdict); got != tc.want {
			t.Errorf("%s: binding %d, want %d", tc.name, got, tc.want)
		}
	}
}
