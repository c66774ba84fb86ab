package admin

import (
	"strings"
	"testing"
	"time"
)

func TestNodeTableGPUUse(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		node NodeJSON
		want string
	}{
		{"no readings", NodeJSON{ID: "n1", GPUs: []NodeGPUJSON{{ID: "g0", MemoryTotalGB: 80}}}, "  -  "},
		{"two GPUs", NodeJSON{ID: "n2", GPUs: []NodeGPUJSON{
			{ID: "g0", MemoryTotalGB: 80, MemoryUsedGB: f(30.4), UtilizationPercent: f(90), TemperatureC: f(71)},
			{ID: "g1", MemoryTotalGB: 80, MemoryUsedGB: f(10), UtilizationPercent: f(10), TemperatureC: f(64)},
		}}, "40/160 GB 50% 71°C max"},
		{"stale", NodeJSON{ID: "n3", TelemetryStale: true, GPUs: []NodeGPUJSON{{ID: "g0", MemoryTotalGB: 48, MemoryUsedGB: f(2)}}},
			"2/48 GB (stale)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteNodeTable(&b, []NodeJSON{tc.node}, now); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if len(lines) != 2 || !strings.Contains(lines[0], "GPU USE") || !strings.Contains(lines[1], tc.want) {
				t.Fatalf("table:\n%s\nwant a GPU USE column with %q", b.String(), tc.want)
			}
		})
	}
}
