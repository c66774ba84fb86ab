package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestMeanCI(t *testing.T) {
	// Four values, mean 5, sample sd sqrt(20/3); t(0.975, 3) = 3.182446.
	m, lo, hi := meanCI([]float64{2, 4, 6, 8})
	h := 3.182446305284263 * math.Sqrt(20.0/3) / 2
	if m != 5 || math.Abs(lo-(5-h)) > 1e-9 || math.Abs(hi-(5+h)) > 1e-9 {
		t.Fatalf("meanCI = %v [%v, %v], want 5 ± %v", m, lo, hi, h)
	}
	// Equal values give exactly that value, however many.
	if m, lo, hi := meanCI([]float64{0.1, 0.1, 0.1}); m != 0.1 || lo != 0.1 || hi != 0.1 {
		t.Fatalf("meanCI of equal values = %v [%v, %v]", m, lo, hi)
	}
	if m, lo, hi := meanCI([]float64{3}); m != 3 || lo != 3 || hi != 3 {
		t.Fatalf("meanCI of one value = %v [%v, %v]", m, lo, hi)
	}
}

// TestReplicationsCoverErlangC: 20 trials of an M/M/2 farm at ρ = 0.85,
// each the mean of 5 replications of 20 h after a 2 h warm-up; the 95%
// interval of the mean wait must hold Erlang C's value in at least 18 of
// them. Over 200 such trials it held it in 182 (91%): runs this short
// have skewed mean waits (a run with few long queues has a low mean and a
// small spread), so the misses are low ones; 30 h runs reached 93%.
func TestReplicationsCoverErlangC(t *testing.T) {
	const c, service, rho, trials, reps = 2, 60.0, 0.85, 20, 5
	want := erlangCWait(c, rho*c/service, 1/service)
	fleet, wl := mmcSetup(c, rho*c)
	covered := 0
	for trial := range trials {
		rep, err := Simulate(fleet, wl, SimConfig{Hours: 22, WarmupHours: 2, Seed: uint64(1000 * (trial + 1)), Replications: reps})
		if err != nil {
			t.Fatal(err)
		}
		e := rep.estimates()["mode/manual/wait_mean"]
		in := e.CILow <= want && want <= e.CIHigh
		if in {
			covered++
		}
		t.Logf("trial %2d: mean wait %.1f s, 95%% CI [%.1f, %.1f] (Erlang C %.1f s) covered %v", trial, e.Mean, e.CILow, e.CIHigh, want, in)
		if rep.Modes[0].Wait.Mean != e.Mean || rep.Replications != reps {
			t.Fatalf("report mean %v, CI mean %v, replications %d", rep.Modes[0].Wait.Mean, e.Mean, rep.Replications)
		}
	}
	if covered < 18 {
		t.Fatalf("the interval held Erlang C's %.1f s in %d of %d trials, want at least 18", want, covered, trials)
	}
}

// TestReplicationsDeterministic: the same seed and replications give the
// same table, CSV, JSON and SVG byte for byte on one core or several, for
// a run and for a sweep; one replication is the single run.
func TestReplicationsDeterministic(t *testing.T) {
	fleet, wl := loadExamples(t)
	wl.SLOs = []SLO{{Metric: MetricGPUWait, Seconds: 120}}
	mfleet, mwl := mmcSetup(1, 3.2)
	run := func(procs int) (map[string][]byte, map[string][]byte) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		rep, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 7, Replications: 4})
		if err != nil {
			t.Fatal(err)
		}
		sw, err := Sweep(mfleet, mwl, SimConfig{Hours: 4, Seed: 5, WarmupHours: 1, Replications: 3},
			SweepConfig{Group: "h100", Min: 4, Max: 6, TargetP95: 100})
		if err != nil {
			t.Fatal(err)
		}
		return outputs(t, rep), outputs(t, sw)
	}
	rep1, sw1 := run(1)
	rep2, sw2 := run(2)
	for ext := range rep1 {
		if !bytes.Equal(rep1[ext], rep2[ext]) || !bytes.Equal(sw1[ext], sw2[ext]) {
			t.Errorf("%s differs between GOMAXPROCS 1 and 2", ext)
		}
	}
	for _, want := range []string{"4 seeds from 7", "± "} {
		if !bytes.Contains(rep1["txt"], []byte(want)) {
			t.Errorf("table has no %q:\n%s", want, rep1["txt"])
		}
	}
	checkSVG(t, rep1["svg"], "4 seeds from 7", `id="ci-bands"`, "shaded: 95% CI over 4 seeds")
	checkSVG(t, sw1["svg"], "3 seeds from 5", `id="ci-bands"`)
	if !bytes.HasPrefix(rep1["csv"], []byte("scope,name,metric,value,ci_low,ci_high\n")) ||
		!bytes.Contains(rep1["csv"], []byte("\nfarm,,gpus,40,,\n")) {
		t.Errorf("CSV:\n%.400s", rep1["csv"])
	}

	one, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 7, Replications: 1})
	if err != nil {
		t.Fatal(err)
	}
	zero, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, zero) || one.Replications != 0 || one.CI != nil {
		t.Fatal("one replication is not the single run")
	}
	if _, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 7, Replications: -1}); err == nil || !strings.Contains(err.Error(), "replications:") {
		t.Fatalf("replications -1: err = %v", err)
	}
}

// TestReplicationsCombine: the combined report's figures, counts
// included, are the means of the runs'.
func TestReplicationsCombine(t *testing.T) {
	fleet, wl := loadExamples(t)
	wl.SLOs = []SLO{{Metric: MetricGPUWait, Seconds: 120}}
	cfg := SimConfig{Hours: 1, Seed: 3}
	var runs []SimReport
	for i := range 3 {
		r, err := Simulate(fleet, wl, replicaConfig(cfg, i))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	cfg.Replications = 3
	rep, err := Simulate(fleet, wl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mean := func(f func(SimReport) float64) float64 {
		return (f(runs[0]) + f(runs[1]) + f(runs[2])) / 3
	}
	for name, f := range map[string]func(SimReport) float64{
		"gpu utilisation": func(r SimReport) float64 { return r.GPUUtilisation },
		"turnaround p95":  func(r SimReport) float64 { return r.Overall.Turnaround.P95 },
		"timeline p99":    func(r SimReport) float64 { return r.Timeline[3].GPUWaitP99 },
	} {
		if got, want := f(rep), mean(f); math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Errorf("%s: %v, want the runs' mean %v", name, got, want)
		}
	}
	// Counts too: a mean, not rounded.
	if want := mean(func(r SimReport) float64 { return r.Submitted }); math.Abs(rep.Submitted-want) > 1e-9*want {
		t.Errorf("submitted %v, want the runs' mean %v", rep.Submitted, want)
	}
	if len(rep.CI) == 0 || rep.Seed != 3 || rep.GPUs != runs[0].GPUs {
		t.Fatalf("combined report: %d CIs, seed %d, %d GPUs", len(rep.CI), rep.Seed, rep.GPUs)
	}
	for _, e := range rep.CI {
		if !(e.CILow <= e.Mean && e.Mean <= e.CIHigh) {
			t.Errorf("%+v: mean outside its interval", e)
		}
	}
}

// TestSweepReplicationsUncertain: an M/M/c sweep whose target is the p95
// theory gives 5 GPUs: 5's interval lies across the target, so the sweep
// answers 6, certain to meet it, and says it cannot tell 5 from it.
func TestSweepReplicationsUncertain(t *testing.T) {
	const erlangs = 3.2
	mu := 1.0 / 60
	target := math.Round(mmcP95(5, erlangs*mu, mu)) // 58 s
	fleet, wl := mmcSetup(1, erlangs)
	res, err := Sweep(fleet, wl, SimConfig{Hours: 12, Seed: 11, WarmupHours: 1, Replications: 5},
		SweepConfig{Group: "h100", Min: 4, Max: 7, TargetP95: target})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", res)
	verdicts := map[int]string{}
	for _, p := range res.Points {
		verdicts[p.Count] = p.Verdict
		if p.CI == nil || !(p.CI.P95.Low <= p.P95 && p.P95 <= p.CI.P95.High) {
			t.Errorf("%d: p95 %v outside its interval %+v", p.Count, p.P95, p.CI)
		}
	}
	if want := map[int]string{4: VerdictMisses, 5: VerdictUncertain, 6: VerdictMeets, 7: VerdictMeets}; !reflect.DeepEqual(verdicts, want) {
		t.Fatalf("verdicts %v, want %v", verdicts, want)
	}
	if !res.Found || res.Smallest != 6 || !reflect.DeepEqual(res.Uncertain, []int{5}) || res.Replications != 5 {
		t.Fatalf("smallest %d (found %v), uncertain %v, replications %d", res.Smallest, res.Found, res.Uncertain, res.Replications)
	}
	s := res.String()
	for _, want := range []string{"smallest h100 count certain to meet the target: 6", "cannot tell whether 5 meets it", "uncertain"} {
		if !strings.Contains(s, want) {
			t.Errorf("table has no %q", want)
		}
	}
	var csvOut bytes.Buffer
	if err := res.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(csvOut.String(), "\n"); !strings.HasSuffix(lines[0], ",verdict") || !strings.HasSuffix(lines[2], ",uncertain") {
		t.Errorf("sweep CSV:\n%s", csvOut.String())
	}
}

// TestIntervalsStayInRange: with few replications Student's t reaches
// past 100% (or below 0%) for a share near it, and below 0 for a count or
// a wait near 0; a proportion's interval is cut to [0, 1], every other
// figure's at 0 (none is negative), and the table writes the cut interval
// as it is rather than as a ±.
func TestIntervalsStayInRange(t *testing.T) {
	slo := SLO{Metric: MetricGPUWait, Seconds: 60, Target: 0.99}
	run := func(attained, util, completed float64) SimReport {
		return SimReport{Hours: 1, GPUUtilisation: util, Completed: completed,
			Overall: GroupStats{Name: "all", SLOs: []SLOResult{{SLO: slo, Count: 100, Attained: attained, Met: attained >= 0.99}}}}
	}
	// waits is a run whose videos waited p95 s (and in flight videos were
	// left at the end).
	waits := func(p95, inFlight float64) SimReport {
		r := run(1, 0.5, 10)
		r.InFlight = inFlight
		r.Overall.GPUWait = Percentiles{Count: 50, Mean: p95 / 2, P50: p95 / 4, P95: p95, P99: p95, Max: p95}
		return r
	}
	h := func(sd float64, n int) float64 { return tQuantile(n-1) * sd / math.Sqrt(float64(n)) }
	for _, tc := range []struct {
		name           string
		reps           []SimReport
		metric         string
		lo, hi         float64 // want, within 1e-9
		table, notable string
	}{
		{"attainment near 100%", []SimReport{run(0.95, 0.5, 10), run(1, 0.5, 10)}, "all/all/" + sloKey(slo) + "_attained",
			0.975 - h(math.Sqrt(0.00125), 2), 1, "97.50% −31.77%/+2.50%", "± 31.77%"},
		{"utilisation near 0%", []SimReport{run(1, 0.01, 10), run(1, 0.03, 10), run(1, 0.02, 10)}, "farm//gpu_utilisation",
			0, 0.02 + h(0.01, 3), "GPU utilisation 2.0 −2.0/+2.5%", ""},
		{"a count is cut at 0, not at 1", []SimReport{run(1, 0.5, 1), run(1, 0.5, 30)}, "farm//completed",
			0, 15.5 + h(math.Sqrt(420.5), 2), "16 −16/+184 completed", "± 184"},
		{"in flight near 0", []SimReport{waits(10, 0), waits(10, 1)}, "farm//in_flight",
			0, 0.5 + h(math.Sqrt(0.5), 2), "0 −0/+6 in flight", "0 ± 6"},
		{"a p95 wait near 0", []SimReport{waits(1, 0), waits(14.4, 0), waits(7.7, 0)}, "all/all/gpu_wait_p95",
			0, 7.7 + h(6.7, 3), "7.7 −7.7/+16.6", "± 16.6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := combine(tc.reps)
			e, ok := c.estimates()[tc.metric]
			if !ok {
				t.Fatalf("no estimate of %s", tc.metric)
			}
			if math.Abs(e.CILow-tc.lo) > 1e-9 || math.Abs(e.CIHigh-tc.hi) > 1e-9 {
				t.Errorf("interval [%v, %v], want [%v, %v]", e.CILow, e.CIHigh, tc.lo, tc.hi)
			}
			for _, x := range c.CI {
				unit := strings.Contains(x.Metric, "attained") || strings.Contains(x.Metric, "utilisation")
				if x.CILow < 0 || (unit && x.CIHigh > 1) || x.CILow > x.Mean || x.Mean > x.CIHigh {
					t.Errorf("%s/%s/%s: %v in [%v, %v]", x.Scope, x.Name, x.Metric, x.Mean, x.CILow, x.CIHigh)
				}
			}
			out := c.String()
			if !strings.Contains(out, tc.table) || (tc.notable != "" && strings.Contains(out, tc.notable)) {
				t.Errorf("table lacks %q (or has %q):\n%s", tc.table, tc.notable, out)
			}
		})
	}
}

func TestPlusMinus(t *testing.T) {
	for _, tc := range []struct {
		mean, lo, hi float64
		want         string
	}{
		{97.5, 96.3, 98.7, " 97.50% ±  1.20%"},
		{99.6, 98.3, 100, " 99.60% −1.30%/+0.40%"},
		{0.4, 0, 1.7, "  0.40% −0.40%/+1.30%"},
		{100, 100, 100, "100.00% ±  0.00%"},
	} {
		if got := plusMinus("%6.2f%%", "%5.2f%%", tc.mean, tc.lo, tc.hi); got != tc.want {
			t.Errorf("plusMinus(%v, %v, %v) = %q, want %q", tc.mean, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestCombineSkipsRunsWithoutSamples: a figure measured on nothing in
// some runs (the waits of a class none of whose videos got that far, a
// timeline interval without a GPU lease, the cost per rendered minute of
// a run that rendered nothing, the warm-hit share without placements) is
// the mean of the runs that measured it, not pulled towards 0 by the
// others; its interval is theirs, none from one run; and measured in
// none it has no data: no interval, its flag set, an empty CSV cell and
// a dash in the table.
func TestCombineSkipsRunsWithoutSamples(t *testing.T) {
	// run measured each figure on n samples, all of value v (0 for none).
	run := func(n, v float64) SimReport {
		q := Percentiles{Count: n, Mean: v, P50: v, P95: v, P99: v, Max: v, NoData: n == 0}
		all := Percentiles{Count: 10, Mean: 1, P50: 1, P95: 1, P99: 1, Max: 1}
		return SimReport{Hours: 1, Completed: n, RenderedMinutes: n, CostPerRenderedMinute: v, CostPerRenderedMinuteNoData: n == 0,
			Faults:   &FaultStats{GPUPlacements: n, WarmHitShare: v / 1000, WarmHitShareNoData: n == 0},
			Overall:  GroupStats{Name: "all", Submitted: 10, Completed: 10, Wait: all, GPUWait: all, Turnaround: all},
			Accounts: []GroupStats{{Name: "rare", Submitted: n, Completed: n, Wait: q, GPUWait: q, Turnaround: q}},
			Timeline: []TimelinePoint{{Hours: 1, GPUWaitP50: v, GPUWaitP95: v, GPUWaitP99: v, GPUWaitNoData: n == 0}},
		}
	}
	for _, tc := range []struct {
		name string
		reps []SimReport
		mean float64
		runs int // that measured the figures: Estimate.Runs, or 0 when all did
		cell string
	}{
		{"all measured", []SimReport{run(2, 190), run(3, 200), run(1, 210)}, 200, 0, "200.0 ± 24.8"},
		{"one run without", []SimReport{run(2, 190), run(0, 0), run(1, 210)}, 200, 2, "200.0 ± 127.1"},
		{"one run with", []SimReport{run(0, 0), run(4, 150), run(0, 0)}, 150, 1, "150.0 (1 run)"},
		{"none with", []SimReport{run(0, 0), run(0, 0)}, 0, 0, "—"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := combine(tc.reps)
			none := tc.cell == "—"
			est := c.estimates()
			var csvOut bytes.Buffer
			if err := c.WriteCSV(&csvOut); err != nil {
				t.Fatal(err)
			}
			for key, got := range map[string]struct {
				v      float64
				noData bool
			}{
				"class/rare/wait_mean":           {c.Accounts[0].Wait.Mean, c.Accounts[0].Wait.NoData},
				"class/rare/gpu_wait_p50":        {c.Accounts[0].GPUWait.P50, c.Accounts[0].GPUWait.NoData},
				"class/rare/turnaround_p95":      {c.Accounts[0].Turnaround.P95, c.Accounts[0].Turnaround.NoData},
				"class/rare/turnaround_max":      {c.Accounts[0].Turnaround.Max, c.Accounts[0].Turnaround.NoData},
				"timeline/0/gpu_wait_p99":        {c.Timeline[0].GPUWaitP99, c.Timeline[0].GPUWaitNoData},
				"farm//cost_per_rendered_minute": {c.CostPerRenderedMinute, c.CostPerRenderedMinuteNoData},
				"farm//warm_hit_share":           {1000 * c.Faults.WarmHitShare, c.Faults.WarmHitShareNoData},
			} {
				if math.Abs(got.v-tc.mean) > 1e-9 || got.noData != none {
					t.Errorf("%s = %v (no data %v), want the measuring runs' mean %v (no data %v)", key, got.v, got.noData, tc.mean, none)
				}
				e, ok := est[key]
				if ok == none || e.Runs != tc.runs {
					t.Errorf("%s: estimate %+v (present %v), want one of %d runs (0: all) unless none measured it", key, e, ok, tc.runs)
				}
				// The CSV: value and interval empty for no data, the
				// interval empty for one run.
				parts := strings.Split(key, "/")
				var row string
				for _, l := range strings.Split(csvOut.String(), "\n") {
					if strings.HasPrefix(l, strings.Join(parts, ",")+",") {
						row = l
					}
				}
				cells := strings.Split(row, ",")
				if len(cells) != 6 || (cells[3] == "") != none || (cells[4] == "") != (none || tc.runs == 1) {
					t.Errorf("%s: CSV row %q", key, row)
				}
			}
			lines := strings.Split(c.String(), "\n")
			i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "class rare") })
			if i < 0 || !strings.Contains(lines[i+2], "turnaround  "+tc.cell) {
				t.Errorf("table's rare turnaround row, want %q:\n%s", tc.cell, strings.Join(lines, "\n"))
			}
			js, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, flag := range []string{`"no_data":true`, `"gpu_wait_no_data":true`, `"cost_per_rendered_minute_no_data":true`, `"warm_hit_share_no_data":true`} {
				if bytes.Contains(js, []byte(flag)) != none {
					t.Errorf("JSON has %s: %v, want %v", flag, !none, none)
				}
			}
		})
	}
}

// TestFiguresAreNotNegative: cutInterval cuts every interval at 0, which
// keeps its coverage only if no figure can be negative: none is, in a
// run with faults, cold starts and a timeline; and a proportion is at
// most 1.
func TestFiguresAreNotNegative(t *testing.T) {
	fleet := mustDecodeFile(t, "examples/fleet-faults.yaml", DecodeFleet)
	wl := mustDecodeFile(t, "examples/workload.yaml", DecodeWorkload)
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Faults == nil {
		t.Fatal("no fault figures")
	}
	for _, f := range rep.figures() {
		if v := f.value(); v < 0 || v > f.top() {
			t.Errorf("%s/%s/%s = %v, outside [0, %v]", f.scope, f.name, f.metric, v, f.top())
		}
	}
}

// TestMeanCountsKeepTheirPrecision: a count averaged over runs is a mean,
// not rounded: a class that submitted a video in 4 runs of 10 has 0.4
// videos a run in the JSON (not 0), in the table at the precision of its
// interval ("0.4 ± 0.4", not "0 ± 0"), with its SLO's count and the
// videos of its cost share as means too, and a cost per video (over 0.4
// videos, not "no data" over 0). Counts the same in every run, or with
// a wide interval, stay whole.
func TestMeanCountsKeepTheirPrecision(t *testing.T) {
	slo := SLO{Metric: MetricTurnaround, Seconds: 600, Target: 0.9}
	var reps []SimReport
	for i := range 10 {
		rare := GroupStats{Name: "rare", Wait: Percentiles{NoData: true}, GPUWait: Percentiles{NoData: true},
			Turnaround: Percentiles{NoData: true}, SLOs: []SLOResult{{SLO: slo, NoData: true}}}
		if i%5 < 2 { // runs 0, 1, 5, 6: one video, done in 100 s
			rare.Submitted, rare.Completed, rare.completedAll = 1, 1, 1
			rare.Turnaround = Percentiles{Count: 1, Mean: 100, P50: 100, P95: 100, P99: 100, Max: 100}
			rare.SLOs[0] = SLOResult{SLO: slo, Count: 1, Attained: 1, Met: true}
			rare.gpuSeconds, rare.renderedMinutes = 60, 0.5
		}
		common := GroupStats{Name: "common", Submitted: 10, Completed: 10, completedAll: 10, gpuSeconds: 600, renderedMinutes: 5}
		r := SimReport{Hours: 1, Cost: 10, Currency: "USD", Accounts: []GroupStats{common, rare},
			Overall: GroupStats{Name: "all", Submitted: 1000, Completed: 990}}
		r.Overall.Submitted += 3 * float64(i)
		reps = append(reps, r)
	}
	c := combine(reps)

	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Accounts []struct {
			Submitted, Completed float64
			Turnaround           struct{ Count float64 }
			SLOs                 []struct{ Count float64 }
		}
		ClassCosts []struct {
			Videos       float64
			CostPerVideo float64 `json:"cost_per_video"`
		} `json:"class_costs"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	rare := doc.Accounts[1]
	for name, v := range map[string]float64{"submitted": rare.Submitted, "completed": rare.Completed,
		"turnaround count": rare.Turnaround.Count, "SLO count": rare.SLOs[0].Count, "cost share's videos": doc.ClassCosts[1].Videos} {
		if math.Abs(v-0.4) > 1e-9 {
			t.Errorf("JSON: rare's %s %v, want the mean 0.4", name, v)
		}
	}
	if doc.ClassCosts[1].CostPerVideo <= 0 {
		t.Errorf("JSON: rare's cost per video %v, want its share over 0.4 videos", doc.ClassCosts[1].CostPerVideo)
	}

	table := c.String()
	for _, want := range []string{
		"class rare         0.4 ± 0.4       0.4 ± 0.4       wait", // 0.4 ± 0.37
		"class common       10 ± 0          10 ± 0          wait",
		"all                1014 ± 6        990 ± 0         wait", // 1013.5 ± 6.5
		"100.00% ±  0.00% of 0.4      (target 90.00%)  met",
		"class rare                  0.0    3.8%         0.38        0.4          0.962",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	var csvOut bytes.Buffer
	if err := c.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nclass,rare,submitted,0.4,", "\nclass,rare,cost_per_video,0.96153846,"} {
		if !strings.Contains(csvOut.String(), want) {
			t.Errorf("CSV lacks %q:\n%s", want, csvOut.String())
		}
	}
}

func TestCountDecimals(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		least  int
		want   int
	}{
		{5, 5, 0, 0},         // every run the same
		{0.03, 0.77, 0, 1},   // ± 0.37
		{0.35, 0.45, 0, 2},   // ± 0.05
		{0, 2, 0, 0},         // ± 1
		{100, 700, 0, 0},     // ± 300
		{2.3, 2.5, 1, 1},     // ± 0.1, at least one decimal
		{0.399, 0.401, 0, 3}, // ± 0.001
	} {
		if got := countDecimals(Estimate{CILow: tc.lo, CIHigh: tc.hi}, tc.least); got != tc.want {
			t.Errorf("countDecimals([%v, %v], %d) = %d, want %d", tc.lo, tc.hi, tc.least, got, tc.want)
		}
	}
}

// TestCostPerRenderedMinuteIsMeanOfRunRatios pins the estimator: with
// replications the cost per rendered minute is the mean of the runs' own
// ratios with its t interval (the replication/deletion estimator; see
// sim_figures.go), not the cost over the mean minutes (a ratio of sums),
// and a run that rendered nothing is left out.
func TestCostPerRenderedMinuteIsMeanOfRunRatios(t *testing.T) {
	run := func(minutes float64) SimReport {
		r := SimReport{Hours: 1, Cost: 100, RenderedMinutes: minutes, CostPerRenderedMinute: 100 / max(minutes, 1)}
		if minutes > 0 {
			r.Completed = 1
		} else {
			r.CostPerRenderedMinute, r.CostPerRenderedMinuteNoData = 0, true
		}
		return r
	}
	c := combine([]SimReport{run(50), run(100), run(0), run(200)})
	want := (2 + 1 + 0.5) / 3.0 // not 100·4/350 = 1.14, nor 100·3/350 = 0.86
	e := c.estimates()["farm//cost_per_rendered_minute"]
	if math.Abs(c.CostPerRenderedMinute-want) > 1e-12 || math.Abs(e.Mean-want) > 1e-12 || e.Runs != 3 {
		t.Fatalf("cost per rendered minute %v (estimate %+v), want the mean of the 3 runs' ratios %v", c.CostPerRenderedMinute, e, want)
	}
}
