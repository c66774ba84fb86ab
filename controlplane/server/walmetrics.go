package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// walSeries are raft-wal's own counters and gauge (wal.MetricDefinitions),
// by its name, with the name and help they get on /metrics. Its two
// stable-store counters are left out: the node keeps its term and vote in
// raft.db, so they would stay 0. TestWALSeriesCoverRaftWAL fails when a
// raft-wal upgrade adds one, so that it is named here or left out on
// purpose.
var walSeries = map[string]struct {
	name, help string
	gauge      bool
}{
	"log_entry_bytes_written": {name: "vidfarm_raft_log_written_bytes_total",
		help: "Bytes of Raft log entries this member's log (raft-wal) wrote, as encoded; the disk takes a little more for headers and the index."},
	"log_entries_written": {name: "vidfarm_raft_log_written_entries_total",
		help: "Raft log entries this member's log wrote."},
	"log_appends": {name: "vidfarm_raft_log_appends_total",
		help: "Appends to this member's log, each a batch of entries and one fsync: written entries over appends is how well writes are batched."},
	"log_entry_bytes_read": {name: "vidfarm_raft_log_read_bytes_total",
		help: "Bytes of Raft log entries read back from this member's log: entries sent to a follower behind the cache, and the replay at start."},
	"log_entries_read": {name: "vidfarm_raft_log_read_entries_total",
		help: "Raft log entries read back from this member's log."},
	"segment_rotations": {name: "vidfarm_raft_log_segments_filled_total",
		help: "Segment files of this member's log filled and sealed (16 MiB each); whole segments behind the last snapshot are deleted."},
	"head_truncations": {name: "vidfarm_raft_log_compacted_entries_total",
		help: "Entries removed from the old end of this member's log once a snapshot held them."},
	"tail_truncations": {name: "vidfarm_raft_log_overwritten_entries_total",
		help: "Entries removed from the new end of this member's log: a follower's entries that a new leader did not have (after an election)."},
	"last_segment_age_seconds": {name: "vidfarm_raft_log_last_segment_age_seconds", gauge: true,
		help: "How long the last segment of this member's log took to fill (0 until one has): how fast writes fill the disk."},
}

// walLeftOut are raft-wal's series walSeries leaves out, and why: see
// walSeries.
var walLeftOut = map[string]bool{"stable_gets": true, "stable_sets": true}

// walCollector reads a node's raft-wal counters at every scrape.
type walCollector struct {
	node  *raftnode.Node
	descs map[string]*prometheus.Desc // by raft-wal's name
}

func newWALCollector(n *raftnode.Node) *walCollector {
	c := &walCollector{node: n, descs: map[string]*prometheus.Desc{}}
	for k, s := range walSeries {
		c.descs[k] = prometheus.NewDesc(s.name, s.help, nil, nil)
	}
	return c
}

func (c *walCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *walCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.node.LogStats()
	for k, d := range c.descs {
		if walSeries[k].gauge {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(st.Gauges[k]))
			continue
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(st.Counters[k]))
	}
}
