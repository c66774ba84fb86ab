package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestVerdictOutputsSayWhatIsKnown: the text answers of a search and a
// sweep claim no more than was measured.
func TestVerdictOutputsSayWhatIsKnown(t *testing.T) {
	ci := &SweepCI{} // replicated points carry intervals
	groups := []OptimizeGroup{{Name: "h100", Max: 2}, {Name: "l40s", Max: 4}}
	for _, tc := range []struct {
		name      string
		out       string
		want, not []string
	}{
		{"a search with only uncertain fleets", OptimizeResult{Groups: groups, Uncertain: [][]int{{0, 4}}}.String(),
			[]string{"no fleet in the ranges is certain to meet every class's SLOs", "cheaper but uncertain", "h100 0, l40s 4"},
			[]string{"raise the maxima"}},
		{"a search with nothing near", OptimizeResult{Groups: groups}.String(),
			[]string{"raise the maxima"}, []string{"uncertain"}},
		{"a sweep met at its first size", SweepResult{Group: "l40s", Replications: 3, Found: true, Smallest: 3,
			Points: []SweepPoint{{Count: 3, Met: true, CI: ci}, {Count: 4, Met: true, CI: ci}}}.String(),
			[]string{"smallest l40s count certain to meet the target: 3", "the smallest size tried already meets it", "below 3"},
			[]string{"the answer is certain"}},
		{"one run met at its first size", SweepResult{Group: "l40s", Found: true, Smallest: 3,
			Points: []SweepPoint{{Count: 3, Met: true}}}.String(),
			[]string{"smallest l40s count that meets the target: 3", "the smallest size tried already meets it"}, nil},
		{"a sweep met above a size that misses", SweepResult{Group: "l40s", Replications: 3, Found: true, Smallest: 3,
			Points: []SweepPoint{{Count: 2, CI: ci}, {Count: 3, Met: true, CI: ci}}}.String(),
			[]string{"the answer is certain"}, []string{"already meets"}},
		{"a sweep by class met at its first size", SweepResult{Group: "l40s", ByClass: true, Found: true, Smallest: 1,
			Points: []SweepPoint{{Count: 1, Met: true}}}.String(),
			[]string{"smallest size tried already meets them"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				if !strings.Contains(tc.out, w) {
					t.Errorf("output lacks %q:\n%s", w, tc.out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(tc.out, n) {
					t.Errorf("output says %q:\n%s", n, tc.out)
				}
			}
		})
	}
}

// TestSLOVerdictAgreesAcrossOutputs: with replications an SLO's verdict
// is the same in the table, the JSON (met, verdict) and the CSV (met and
// a verdict row): met only when the whole interval is at or above the
// target. A mean above the target whose interval reaches below it, or
// that one run alone measured, is uncertain everywhere, not met in the
// JSON and CSV; and the sweep's and optimizer's checks of it never count
// it as met.
func TestSLOVerdictAgreesAcrossOutputs(t *testing.T) {
	slo := SLO{Metric: MetricGPUWait, Seconds: 60, Target: 0.9}
	key := sloKey(slo)
	// run measured the SLO (on 100 GPU tasks) with attainment a, or, for a
	// negative a, measured nothing; the class has it too.
	run := func(a float64) SimReport {
		o := SLOResult{SLO: slo, Attained: a, Met: a >= 0.9}
		if a < 0 {
			o = SLOResult{SLO: slo, NoData: true}
		} else {
			o.Count = 100
		}
		return SimReport{Hours: 1, Overall: GroupStats{Name: "all", SLOs: []SLOResult{o}},
			Accounts: []GroupStats{{Name: "pro", SLOs: []SLOResult{o}}}}
	}
	for _, tc := range []struct {
		name    string
		runs    []float64
		verdict string // the JSON's and CSV's; the table writes MISSED
		sweep   string // classChecks'
	}{
		{"certainly met", []float64{0.95, 0.96, 0.97}, "met", VerdictMeets},
		{"certainly missed", []float64{0.5, 0.55, 0.6}, "missed", VerdictMisses},
		{"mean above, interval across", []float64{0.85, 0.99, 0.95}, "uncertain", VerdictUncertain},
		{"one run measured it", []float64{-1, 1, -1}, "uncertain", VerdictUncertain},
		{"no run measured it", []float64{-1, -1}, "no data", VerdictNoData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reps []SimReport
			for _, a := range tc.runs {
				reps = append(reps, run(a))
			}
			c := combine(reps)
			met := tc.verdict == "met"

			// Table.
			word := map[string]string{"missed": "MISSED"}[tc.verdict]
			if word == "" {
				word = tc.verdict
			}
			var lines []string
			for _, l := range strings.Split(c.String(), "\n") {
				if strings.Contains(l, "gpu_wait   <=") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 2 {
				t.Fatalf("want two SLO lines, table:\n%s", c.String())
			}
			for _, l := range lines {
				if !strings.HasSuffix(l, "  "+word) {
					t.Errorf("table line %q, want it to end in %q", l, word)
				}
			}

			// JSON.
			js, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Overall struct {
					SLOs []map[string]any `json:"slos"`
				} `json:"overall"`
				Accounts []struct {
					SLOs []map[string]any `json:"slos"`
				} `json:"accounts"`
			}
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatal(err)
			}
			for _, o := range []map[string]any{doc.Overall.SLOs[0], doc.Accounts[0].SLOs[0]} {
				if o["met"] != met || o["verdict"] != tc.verdict {
					t.Errorf("JSON SLO met %v verdict %v, want met %v verdict %q", o["met"], o["verdict"], met, tc.verdict)
				}
			}

			// CSV.
			var csvOut bytes.Buffer
			if err := c.WriteCSV(&csvOut); err != nil {
				t.Fatal(err)
			}
			metCell := map[bool]string{true: "1", false: "0"}[met]
			for _, want := range []string{
				"\nall,all," + key + "_met," + metCell + ",,\nall,all," + key + "_verdict," + tc.verdict + ",,\n",
				"\nclass,pro," + key + "_met," + metCell + ",,\nclass,pro," + key + "_verdict," + tc.verdict + ",,\n",
			} {
				if !strings.Contains(csvOut.String(), want) {
					t.Errorf("CSV lacks %q:\n%s", want, csvOut.String())
				}
			}

			// The sweep's and optimizer's judgement of the same report.
			classes, v := classChecks(c)
			if v != tc.sweep || classes[0].Met != (tc.sweep == VerdictMeets) || classes[0].SLOs[0].Met != (tc.sweep == VerdictMeets) {
				t.Errorf("classChecks: verdict %q, class met %v, SLO met %v; want %q", v, classes[0].Met, classes[0].SLOs[0].Met, tc.sweep)
			}
		})
	}
}

// TestSweepFigureOfOneRun: a sweep size at which one replication alone
// measured anything against the target is uncertain, and its table and
// CSV say "(1 run)" and leave the interval out rather than write ± 0.
func TestSweepFigureOfOneRun(t *testing.T) {
	slo := SLO{Metric: MetricGPUWait, Seconds: 100, Target: 0.95}
	run := func(measured bool) SimReport {
		r := SimReport{Hours: 1, GPUs: 4, Cost: 4, Overall: GroupStats{Name: "all",
			GPUWait: Percentiles{NoData: true}, SLOs: []SLOResult{{SLO: slo, NoData: true}}}}
		if measured {
			r.Overall.GPUWait = Percentiles{Count: 10, Mean: 20, P50: 10, P95: 40, P99: 50, Max: 60}
			r.Overall.SLOs[0] = SLOResult{SLO: slo, Count: 10, Attained: 1, Met: true}
		}
		return r
	}
	p := sweepPoint(1, []SimReport{run(false), run(true), run(false)}, MetricGPUWait, false)
	res := SweepResult{Group: "h100", Metric: MetricGPUWait, TargetP95: 100, Replications: 3, Points: []SweepPoint{p}}
	if p.Met || p.Verdict != VerdictUncertain {
		t.Fatalf("point %+v, want uncertain and not met", p)
	}
	table := res.String()
	var row string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "1 ") {
			row = l
		}
	}
	if !strings.Contains(row, "40.0 (1 run)") || !strings.Contains(row, "100.00% (1 run)") {
		t.Errorf("table row %q, want the p95 and the share with (1 run), no ± 0", row)
	}
	var csvOut bytes.Buffer
	if err := res.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(csvOut.String(), "\n")
	head, cells := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	for i, h := range head {
		switch h {
		case "p95_ci_low", "p95_ci_high", "attained_ci_low", "attained_ci_high":
			if cells[i] != "" {
				t.Errorf("CSV %s = %q, want empty (one run)", h, cells[i])
			}
		case "p95", "attained":
			if cells[i] == "" {
				t.Errorf("CSV %s empty, want the one run's value", h)
			}
		}
	}
}
