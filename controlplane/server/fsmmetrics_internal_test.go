package server

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSnapshotPhasesExportedAtZero: both phases of the snapshot histogram
// are on /metrics before the first snapshot, so the first one is a rise
// from 0 that increase() sees: the dashboard's "Snapshot duration"
// (increase of _sum over increase of _count) would otherwise show 0/0
// until a member's second snapshot.
func TestSnapshotPhasesExportedAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs := fsmObserver(reg)
	counts := func() map[string]uint64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, mf := range mfs {
			if mf.GetName() != "vidfarm_fsm_snapshot_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		phase string // the phase that ends next; "" for none
		want  map[string]uint64
	}{
		{"before any snapshot", "", map[string]uint64{"copy": 0, "persist": 0}},
		{"the first copy", "copy", map[string]uint64{"copy": 1, "persist": 0}},
		{"the first persist", "persist", map[string]uint64{"copy": 1, "persist": 1}},
	} {
		if tc.phase != "" {
			obs.Snapshot(tc.phase, time.Millisecond, 10)
		}
		got := counts()
		if len(got) != 2 || got["copy"] != tc.want["copy"] || got["persist"] != tc.want["persist"] {
			t.Errorf("%s: vidfarm_fsm_snapshot_seconds_count by phase %v, want %v", tc.name, got, tc.want)
		}
	}
}
