package bench

import (
	"regexp"
	"strings"
	"testing"
)

// columnStarts reports whether, in every line of table that has a cell at
// the header's column of name, that cell starts there: two spaces before
// it and none at it.
func columnStarts(t *testing.T, table, header, name string) {
	t.Helper()
	lines := strings.Split(table, "\n")
	hi := -1
	for i, l := range lines {
		if strings.HasPrefix(l, header) {
			hi = i
			break
		}
	}
	if hi < 0 {
		t.Fatalf("no line starting %q in\n%s", header, table)
	}
	col := len([]rune(lines[hi][:strings.Index(lines[hi], name)]))
	for _, l := range lines[hi+1:] {
		if l == "" {
			break
		}
		r := []rune(l)
		if len(r) <= col || strings.TrimSpace(string(r[:col])) == "" && r[col] == ' ' {
			continue // a continuation line without that cell
		}
		if string(r[col-2:col]) != "  " || r[col] == ' ' {
			t.Errorf("column %q out of line (at rune %d):\n%s\n%s", name, col, lines[hi], l)
		}
	}
}

// TestTablesStayAlignedWithLargeWaits: an overloaded farm's waits run to
// six digits and its intervals are cut at 0; every column of the tables
// still starts where its header does.
func TestTablesStayAlignedWithLargeWaits(t *testing.T) {
	fleet, wl := loadExamples(t)
	fleet.Groups = fleet.Groups[:1]
	fleet.Groups[0].Count = 1
	wl.ManualShare, wl.Auto = 1, nil
	wl.Accounts = []AccountClass{{Name: "all", Count: 10, Share: 1}} // no priority class to cut through the queue
	for _, repl := range []int{1, 3} {
		rep, err := Simulate(fleet, wl, SimConfig{Hours: 100, Seed: 1, Replications: repl})
		if err != nil {
			t.Fatal(err)
		}
		// Wider than the cells were: 36 for a single run's, 18 less the
		// space between for a replicated run's.
		if s := summary(rep.Overall.GPUWait); rep.Overall.GPUWait.P95 < 100000 || len(s) <= 36 {
			t.Fatalf("GPU wait %s s: not large enough to test anything", s)
		}
		table := rep.String()
		if repl == 1 {
			for _, c := range []string{"wait s", "GPU wait s", "turnaround s"} {
				columnStarts(t, table, "group ", c)
			}
			continue
		}
		for _, c := range []string{"p50 s", "p95 s", "p99 s"} {
			columnStarts(t, table, "group ", c)
		}
	}
}

// TestReplicatedSweepCellsApart: the sweep's cells are at least two
// spaces apart, however wide, so that a p95 and a cut interval of the
// share within do not read as one cell.
func TestReplicatedSweepCellsApart(t *testing.T) {
	r := SweepResult{Group: "h100", Metric: MetricGPUWait, TargetP95: 30, Replications: 10, Points: []SweepPoint{
		{Count: 5, GPUs: 40, P95: 58698.6, Attained: 0.0003, GPUUtilisation: 1, CostPerHour: 100, CostPerRenderedMinute: 1.5, Verdict: VerdictMisses,
			CI: &SweepCI{P95: Interval{Low: 54908.7, High: 62488.5}, Attained: Interval{Low: 0, High: 0.0009},
				GPUUtilisation: Interval{Low: 1, High: 1}, CostPerRenderedMinute: Interval{Low: 1.4, High: 1.6}}},
		{Count: 6, GPUs: 48, P95: 1.5, Attained: 1, GPUUtilisation: 0.5, CostPerHour: 120, CostPerRenderedMinute: 1.8, Verdict: VerdictMeets,
			CI: &SweepCI{P95: Interval{Low: 1, High: 2}, Attained: Interval{Low: 1, High: 1},
				GPUUtilisation: Interval{Low: 0.49, High: 0.51}, CostPerRenderedMinute: Interval{Low: 1.7, High: 1.9}}},
	}}
	table := r.String()
	apart := regexp.MustCompile(`\s{2,}`)
	var fields []int
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "   count") || strings.HasPrefix(l, "       5") || strings.HasPrefix(l, "       6") {
			fields = append(fields, len(apart.Split(strings.TrimSpace(l), -1)))
		}
	}
	if len(fields) != 3 || fields[1] != fields[0] || fields[2] != fields[0] {
		t.Fatalf("cells per line (header, 5, 6) = %v, want the same:\n%s", fields, table)
	}
	for _, c := range []string{"p95 s", "within", "GPU use"} {
		columnEnds(t, table, c)
	}
}

// columnEnds: a right-aligned column's cells end where its header does.
func columnEnds(t *testing.T, table, name string) {
	t.Helper()
	lines := strings.Split(table, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "   count") {
			continue
		}
		end := len([]rune(l[:strings.Index(l, name)])) + len([]rune(name))
		for _, row := range lines[i+1 : i+3] {
			r := []rune(row)
			if len(r) <= end || r[end-1] == ' ' || r[end] != ' ' {
				t.Errorf("column %q does not end at rune %d:\n%s\n%s", name, end, l, row)
			}
		}
		return
	}
	t.Fatalf("no header in\n%s", table)
}
