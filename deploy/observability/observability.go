// Package observability holds the farm's Grafana dashboard and Prometheus
// alerting rules (README.md), and reads the PromQL in them so that tests can
// check every metric they name against what the control plane and the
// agents really export (cmd/vidfarm's TestObservabilityMetricsExported,
// agent's TestObservabilityGPUMetrics).
package observability

import (
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// files are the dashboard and the rules, as shipped.
//
//go:embed dashboard.json alerts.yml
var files embed.FS

// Query is one PromQL expression and where it is written.
type Query struct {
	Where string // "alerts.yml: VidfarmNoLeader", "dashboard.json: panel 7 (Leader) A"
	Expr  string
}

// rules is the part of a Prometheus rules file the checks read.
type rules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// dashboard is the part of a Grafana dashboard (classic JSON model) the
// checks read.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// panel is a dashboard panel or row; a collapsed row holds its panels.
type panel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	Datasource json.RawMessage           `json:"datasource"`
	GridPos    *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// load parses one of the files into v (sigs.k8s.io/yaml reads the JSON
// dashboard as well: JSON is YAML).
func load(name string, v any) error {
	raw, err := files.ReadFile(name)
	if err == nil {
		err = yaml.Unmarshal(raw, v)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func loadRules() (rules, error) {
	var r rules
	err := load("alerts.yml", &r)
	return r, err
}

func loadDashboard() (dashboard, error) {
	var d dashboard
	err := load("dashboard.json", &d)
	return d, err
}

// allPanels lists the panels, those inside collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Queries lists every PromQL expression of the rules and the dashboard,
// with Grafana's interval variables replaced by a duration Prometheus reads.
func Queries() ([]Query, error) {
	r, err := loadRules()
	if err != nil {
		return nil, err
	}
	d, err := loadDashboard()
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			out = append(out, Query{Where: "alerts.yml: " + rule.Alert + rule.Record, Expr: rule.Expr})
		}
	}
	for _, p := range d.allPanels() {
		for _, t := range p.Targets {
			out = append(out, Query{Where: fmt.Sprintf("dashboard.json: panel %d (%s) %s", p.ID, p.Title, t.RefID), Expr: grafanaToPromQL(t.Expr)})
		}
	}
	return out, nil
}

// grafanaToPromQL replaces the interval variables Grafana fills in.
func grafanaToPromQL(expr string) string {
	return strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h").Replace(expr)
}

// grouping drops the label lists of by, without, on, ignoring, group_left
// and group_right, which are label names, not metric names.
var grouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)

// keywords are PromQL's words that read like metric names.
var keywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true, "atan2": true}

// MetricNames returns the metric names an expression selects that a
// vidfarm process must export, sorted and unique: the series Prometheus
// makes itself for every target it scrapes (up, scrape_*) are left out,
// since nothing but Prometheus exports them. It reads PromQL lexically:
// string literals, label matchers, ranges and grouping lists are set
// aside, numbers and durations skipped, and a word followed by "(" is a
// function or an aggregation. Syntax is promtool's to check; this only
// finds the names.
func MetricNames(expr string) []string {
	return slices.DeleteFunc(selected(expr), scrapeSeries)
}

// scrapeSeries reports whether Prometheus makes the series name itself,
// for each scrape (https://prometheus.io/docs/concepts/jobs_instances/).
func scrapeSeries(name string) bool {
	return name == "up" || strings.HasPrefix(name, "scrape_")
}

// selected returns every metric name expr selects, Prometheus's own
// series included, sorted and unique (MetricNames).
func selected(expr string) []string {
	s := grouping.ReplaceAllString(dropEnclosed(expr), " ")
	var names []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isDigit(c) || c == '.':
			for i < len(s) && (isWord(s[i]) || s[i] == '.') {
				i++
			}
		case isWordStart(c):
			j := i
			for j < len(s) && isWord(s[j]) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
				k++
			}
			if !(k < len(s) && s[k] == '(') && !keywords[strings.ToLower(word)] {
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// dropEnclosed blanks out string literals and what {…} and […] enclose.
func dropEnclosed(expr string) string {
	var b strings.Builder
	var quote byte
	depth := 0
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			b.WriteByte(' ')
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isWord(c byte) bool      { return isWordStart(c) || isDigit(c) }
