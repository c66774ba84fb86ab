package server

import (
	"strings"
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	wal "github.com/hashicorp/raft-wal"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every kept key's second part is in raftSeriesGroups, or kept would drop
// it before looking it up.
func TestRaftSeriesGroups(t *testing.T) {
	for key := range raftSeries {
		if k, ok := kept(strings.Split(key, ".")); !ok || k != key {
			t.Errorf("%s: kept gives %q, %v", key, k, ok)
		}
	}
	if _, ok := kept([]string{"raft", "apply"}); ok {
		t.Error("raft.apply is kept")
	}
}

// TestRaftSink: raft's timers become histograms in seconds and its counter
// a counter, under vidfarm's names, per follower where raft labels them by
// one; what raft labels otherwise, and the keys it does not keep, are
// dropped.
func TestRaftSink(t *testing.T) {
	s := newRaftSink()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	peer := []gometrics.Label{{Name: "peer_id", Value: "cp2"}}
	s.AddSample([]string{"raft", "commitTime"}, 0.004)
	s.AddSample([]string{"raft", "commitTime"}, 0.006)
	s.AddSampleWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, 0.002, peer)
	s.AddSampleWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, 0.002, nil) // no peer: dropped
	s.IncrCounterWithLabels([]string{"raft", "replication", "appendEntries", "logs"}, 64, peer)
	s.IncrCounter([]string{"raft", "apply"}, 1)                                                          // not kept
	s.AddSampleWithLabels([]string{"raft", "commitTime"}, 1, []gometrics.Label{{Name: "x", Value: "y"}}) // unexpected label: dropped

	want := `
# HELP vidfarm_raft_replication_append_entries_logs_total On the leader, the entries sent to one follower (peer_id).
# TYPE vidfarm_raft_replication_append_entries_logs_total counter
vidfarm_raft_replication_append_entries_logs_total{peer_id="cp2"} 64
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vidfarm_raft_replication_append_entries_logs_total"); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		name  string
		count uint64
		sum   float64
		peer  string
	}{
		{"vidfarm_raft_commit_seconds", 2, 0.010, ""},
		{"vidfarm_raft_replication_append_entries_seconds", 1, 0.002, "cp2"},
	} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			if mf.GetName() != c.name {
				continue
			}
			for _, m := range mf.GetMetric() {
				found = true
				h := m.GetHistogram()
				var peer string
				for _, l := range m.GetLabel() {
					peer = l.GetValue()
				}
				if h.GetSampleCount() != c.count || h.GetSampleSum() < c.sum-1e-6 || h.GetSampleSum() > c.sum+1e-6 || peer != c.peer || len(mf.GetMetric()) != 1 {
					t.Errorf("%s{%s}: count %d sum %g (%d series), want count %d sum %g peer %q", c.name, peer, h.GetSampleCount(), h.GetSampleSum(), len(mf.GetMetric()), c.count, c.sum, c.peer)
				}
			}
		}
		if !found {
			t.Errorf("%s: no series", c.name)
		}
	}
}

// Every series raft-wal defines reaches /metrics or is left out on
// purpose, and walSeries names none it does not define: a raft-wal
// upgrade that adds or renames one fails here rather than going unseen.
func TestWALSeriesCoverRaftWAL(t *testing.T) {
	defined := map[string]bool{}
	for _, d := range wal.MetricDefinitions.Counters {
		defined[d.Name] = false
	}
	for _, d := range wal.MetricDefinitions.Gauges {
		defined[d.Name] = true
	}
	for name, gauge := range defined {
		s, ok := walSeries[name]
		switch {
		case !ok && !walLeftOut[name]:
			t.Errorf("raft-wal's %s is neither in walSeries nor in walLeftOut", name)
		case ok && s.gauge != gauge:
			t.Errorf("%s: walSeries says gauge %v, raft-wal %v", name, s.gauge, gauge)
		case ok && gauge == strings.HasSuffix(s.name, "_total"):
			t.Errorf("%s: %s: a counter's name ends in _total, a gauge's does not", name, s.name)
		}
	}
	for name := range walSeries {
		if _, ok := defined[name]; !ok {
			t.Errorf("walSeries names %s, which raft-wal does not define", name)
		}
	}
}
