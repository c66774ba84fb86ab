package observability

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// promtool returns promtool's path; without it the test is skipped, or
// fails when VIDFARM_REQUIRE_TOOLS is set (make test), as the other tests
// that drive an installed tool do.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
			t.Fatal("promtool is not installed and VIDFARM_REQUIRE_TOOLS is set: run scripts/deps.sh (Debian package prometheus)")
		}
		t.Skip("promtool is not installed (Debian package prometheus; set VIDFARM_REQUIRE_TOOLS to make this a failure)")
	}
	return p
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestRulesPassPromtoolCheck(t *testing.T) { runPromtool(t, "check", "rules", "alerts.yml") }

// alerts_test.yml shows alerts firing on the series that should raise them
// and silent otherwise.
func TestRulesUnitTests(t *testing.T) { runPromtool(t, "test", "rules", "alerts_test.yml") }

// Every dashboard query is valid PromQL: they are written out as recording
// rules, which promtool parses.
func TestDashboardQueriesParse(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, q := range qs {
		if !strings.HasPrefix(q.Where, "dashboard.json") {
			continue
		}
		n++
		fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %q\n", n, q.Expr)
	}
	if n < 40 {
		t.Fatalf("%d dashboard queries, want the dashboard's 40 or more", n)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "check", "rules", path)
}

// Each alert says how long, how bad, what and where its runbook is, and the
// runbook section exists.
func TestRulesAnnotated(t *testing.T) {
	r, err := loadRules()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(readme), -1) {
		anchors[githubAnchor(m[1])] = true
	}
	const base = "https://github.com/vidfarm/vidfarm/blob/main/deploy/observability/README.md#"
	var alerts []string
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			a := rule.Alert
			alerts = append(alerts, a)
			if rule.For == "" {
				t.Errorf("%s: no for:", a)
			}
			if s := rule.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("%s: severity %q, want critical, warning or info", a, s)
			}
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if rule.Annotations[k] == "" {
					t.Errorf("%s: no %s annotation", a, k)
				}
			}
			anchor, ok := strings.CutPrefix(rule.Annotations["runbook_url"], base)
			if !ok || anchor != strings.ToLower(a) || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q, want %s%s with a section %q in README.md", a, rule.Annotations["runbook_url"], base, strings.ToLower(a), a)
			}
		}
	}
	// The list: no leader, bridge lag, queue age, nodes lost, GPU
	// memory, webhook failures, data-dir disk; and the audit's: a member
	// down, deliveries abandoned.
	for _, want := range []string{"VidfarmNoLeader", "VidfarmAppDBBridgeLag", "VidfarmQueueAgeHigh", "VidfarmNodesDown",
		"VidfarmGPUMemoryExhausted", "VidfarmWebhookFailureRate", "VidfarmDataDirDiskAlmostFull",
		"VidfarmControlPlaneMemberDown", "VidfarmWebhookDeliveriesAbandoned"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

// githubAnchor is the fragment GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	h := strings.ToLower(strings.TrimSpace(heading))
	h = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

func TestDashboardShape(t *testing.T) {
	d, err := loadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion < 39 || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d, uid %q, title %q: want a current schema (39 or later), a uid and a title", d.SchemaVersion, d.UID, d.Title)
	}
	if len(d.Templating.List) == 0 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Type != "datasource" || d.Templating.List[0].Query != "prometheus" {
		t.Errorf("templating %+v: want a first variable datasource of type datasource over prometheus", d.Templating.List)
	}
	ids := map[int]bool{}
	var rows []string
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %d (%s): no gridPos", p.ID, p.Title)
		}
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if !strings.Contains(string(p.Datasource), `"${datasource}"`) {
			t.Errorf("panel %d (%s): datasource %s, want the ${datasource} variable", p.ID, p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %d (%s): no query", p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || tg.Expr == "" {
				t.Errorf("panel %d (%s): a target without refId or expr", p.ID, p.Title)
			}
		}
	}
	for _, want := range []string{"Control plane", "Queue", "Nodes and GPUs", "Webhooks", "API", "App-database bridge", "Data directory and processes"} {
		if !slices.Contains(rows, want) {
			t.Errorf("no row %q (rows: %v)", want, rows)
		}
	}
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`vidfarm_raft_leader`, []string{"vidfarm_raft_leader"}},
		{`(sum(vidfarm_raft_leader) or vector(0)) < 1`, []string{"vidfarm_raft_leader"}},
		{`sum by (route, le) (rate(api_seconds_bucket{route=~"/v1/{id}", status!="5.."}[5m]))`, []string{"api_seconds_bucket"}},
		{`histogram_quantile(0.99, sum by (le) (q_bucket and on (instance) leader == 1)) > 300`, []string{"leader", "q_bucket"}},
		{`a / ignoring(x) group_left(y, z) b offset 5m`, []string{"a", "b"}},
		{`predict_linear(free[6h], 24 * 3600) < 0 unless sum(x) without (le)`, []string{"free", "x"}},
		{`count(x{job='a"b'}) > 1e3`, []string{"x"}},
		// Prometheus's own series for each target: no vidfarm process
		// exports them, so the exported-metrics checks must not ask.
		{`up{job="vidfarm"} == 0 or scrape_duration_seconds > 1`, nil},
		{`up == 0 and on (instance) vidfarm_raft_leader`, []string{"vidfarm_raft_leader"}},
		{`vector(1)`, nil},
	} {
		if got := MetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("MetricNames(%s) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// Every query selects at least one metric (a query of constants, or one the
// reader cannot see into, would pass the exported-metrics check unchecked);
// Prometheus's own series (up) count.
func TestEveryQueryNamesAMetric(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if len(selected(q.Expr)) == 0 {
			t.Errorf("%s: %q names no metric", q.Where, q.Expr)
		}
	}
}
