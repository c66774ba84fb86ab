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
		{"no readings", NodeJSON{ID: "n1", GPUs: []NodeGPUJSON{{ID: "g0", MemoryTotalGB: 80}}}, "-"},
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
			// The column's cell: from its header's offset to the next
			// column's (tabwriter aligns them).
			from, to := strings.Index(lines[0], "GPU USE"), strings.Index(lines[0], "RUNNING")
			if len(lines) != 2 || from < 0 || to < from || len(lines[1]) < to {
				t.Fatalf("table:\n%s", b.String())
			}
			if got := strings.TrimSpace(lines[1][from:to]); got != tc.want {
				t.Fatalf("GPU USE = %q, want %q; table:\n%s", got, tc.want, b.String())
			}
		})
	}
}

// A node whose agent leases nothing of its own accord shows paused in its
// state and why in the reason column (a maintenance reason goes first).
func TestNodeTablePaused(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	n := NodeJSON{ID: "node_1", Name: "gpu-1", State: NodeActive, LastHeartbeat: now, Paused: "work dir over its limit"}
	if err := WriteNodeTable(&b, []NodeJSON{n}, now); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "active,paused") || !strings.Contains(out, "work dir over its limit") {
		t.Fatalf("table:\n%s", out)
	}
}
