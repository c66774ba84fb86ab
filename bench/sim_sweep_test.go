package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// mmcP95 is the p95 queue wait of an M/M/c queue: P(W > t) = C(c, a)
// e^{-(c mu - lambda) t}, so p95 = ln(C/0.05)/(c mu - lambda), or 0 when
// fewer than 5% wait at all.
func mmcP95(c int, lambda, mu float64) float64 {
	pWait := erlangCWait(c, lambda, mu) * (float64(c)*mu - lambda) // E[W] = C/(c mu - lambda)
	if pWait <= 0.05 {
		return 0
	}
	return math.Log(pWait/0.05) / (float64(c)*mu - lambda)
}

func TestSweepFindsKnownSmallestFleet(t *testing.T) {
	// 3.2 Erlangs of GPU work. Theory: 4 GPUs give a p95 GPU wait of 186 s,
	// 5 give 58 s, 6 give 20 s; 3 or fewer cannot keep up. With a 100 s
	// target the answer is 5.
	const erlangs, target = 3.2, 100.0
	mu := 1.0 / 60
	if a, b := mmcP95(4, erlangs*mu, mu), mmcP95(5, erlangs*mu, mu); a < 1.5*target || b > target/1.5 {
		t.Fatalf("theory: p95 %.1f s with 4, %.1f s with 5; the test needs a clear margin around %v", a, b, target)
	}
	fleet, wl := mmcSetup(1, erlangs)
	var calls []int
	res, err := Sweep(fleet, wl, SimConfig{Hours: 100, Seed: 5, WarmupHours: 1},
		SweepConfig{Group: "h100", Min: 3, Max: 7, TargetP95: target, Progress: func(done, total int) {
			if total != 5 {
				t.Errorf("progress total %d, want 5", total)
			}
			calls = append(calls, done)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", res)
	if !res.Found || res.Smallest != 5 {
		t.Fatalf("smallest = %d (found %v), want 5", res.Smallest, res.Found)
	}
	if len(calls) != 5 || calls[4] != 5 {
		t.Fatalf("progress calls %v", calls)
	}
	for _, p := range res.Points {
		if p.Count >= 4 {
			want := mmcP95(p.Count, erlangs*mu, mu)
			if math.Abs(p.P95-want) > 0.25*want+5 {
				t.Errorf("%d GPUs: p95 %.1f s, theory %.1f s", p.Count, p.P95, want)
			}
		}
	}
	var svg, csvOut bytes.Buffer
	if err := res.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil || len(rows) != 6 || rows[0][7] != "met" || rows[3][1] != "5" || rows[3][7] != "true" || rows[2][7] != "false" {
		t.Fatalf("sweep CSV (%v): %v", err, rows)
	}
	checkSVG(t, svg.Bytes(), "p95 GPU wait, clipped at 10 min", "target: p95 ≤ 100 s", "SLO target 100 s")

	// Nothing in range meets a target that needs more than 7 GPUs.
	res, err = Sweep(fleet, wl, SimConfig{Hours: 20, Seed: 5}, SweepConfig{Group: "h100", Min: 2, Max: 4, TargetP95: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Found {
		t.Fatalf("found %d for an impossible target", res.Smallest)
	}
}

func TestSweepValidation(t *testing.T) {
	fleet, wl := mmcSetup(1, 1)
	for _, tc := range []struct {
		sc    SweepConfig
		field string
	}{
		{SweepConfig{Group: "nope", Min: 1, Max: 2, TargetP95: 1}, "sweep.group"},
		{SweepConfig{Group: "h100", Min: 3, Max: 2, TargetP95: 1}, "sweep.min"},
		{SweepConfig{Group: "h100", Min: 1, Max: 2, Step: -1, TargetP95: 1}, "sweep.step"},
		{SweepConfig{Group: "h100", Min: 1, Max: 2, TargetP95: -1}, "sweep[0].seconds"},
		{SweepConfig{Group: "h100", Min: 1, Max: 2, Metric: "latency", TargetP95: 1}, "sweep[0].metric"},
	} {
		_, err := Sweep(fleet, wl, SimConfig{Hours: 1, Seed: 1}, tc.sc)
		if err == nil || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%+v: err = %v, want it to name %s", tc.sc, err, tc.field)
		}
	}
}

// checkSVG parses doc as XML and looks for each label in it.
func checkSVG(t *testing.T, doc []byte, labels ...string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	root := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("SVG does not parse: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	for _, l := range labels {
		if !bytes.Contains(doc, []byte(l)) {
			t.Errorf("SVG has no %q", l)
		}
	}
}

// TestSweepFiguresOfNothing: at sizes where no video finished (in any
// run), the p95 turnaround and the cost per rendered minute are no
// numbers, though the target's attainment is (the videos past it still
// pending are misses): a dash in the table, empty in the CSV, flagged in
// the JSON, and no point on the chart, where they were 0, the best p95
// and the cheapest minute of the sweep.
func TestSweepFiguresOfNothing(t *testing.T) {
	fleet, wl := mmcSetup(1, 10) // 600 videos an hour, each 60 s on a GPU
	wl.ExponentialService = false
	for _, repl := range []int{1, 3} {
		res, err := Sweep(fleet, wl, SimConfig{Hours: 0.014, Seed: 1, Replications: repl}, // 50 s: none finishes
			SweepConfig{Group: "h100", Min: 1, Max: 2, Metric: MetricTurnaround, TargetP95: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Points {
			if p.NoData || p.Met || !p.P95NoData || !p.CostPerRenderedMinuteNoData {
				t.Errorf("%d replications, size %d: no data %v, met %v, p95 no data %v, cost no data %v; want the attainment measured, not met, and the p95 and cost not",
					repl, p.Count, p.NoData, p.Met, p.P95NoData, p.CostPerRenderedMinuteNoData)
			}
		}
		out := outputs(t, res)
		for _, l := range strings.Split(string(out["txt"]), "\n") {
			if f := strings.Fields(l); len(f) > 2 && (f[0] == "1" || f[0] == "2") && strings.Count(l, "—") != 2 {
				t.Errorf("%d replications: row %q, want a dash for the p95 and the cost per minute", repl, l)
			}
		}
		rows, err := csv.NewReader(bytes.NewReader(out["csv"])).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows[1:] {
			for i, col := range rows[0] {
				if strings.HasPrefix(col, "p95") || strings.HasPrefix(col, "cost_per_rendered_minute") {
					if row[i] != "" {
						t.Errorf("%d replications: CSV %s = %q, want empty", repl, col, row[i])
					}
				}
			}
		}
		for _, flag := range []string{`"p95_no_data": true`, `"cost_per_rendered_minute_no_data": true`} {
			if c := bytes.Count(out["json"], []byte(flag)); c != 2 {
				t.Errorf("%d replications: JSON has %s %d times, want 2", repl, flag, c)
			}
		}
		if !bytes.Contains(out["svg"], []byte("p95 turnaround (no data)")) {
			t.Errorf("%d replications: the chart's legend does not say the p95 has no data", repl)
		}
	}
}
