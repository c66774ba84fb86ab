package server

import (
	"strings"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// raftSeries are the measurements of hashicorp/raft that reach /metrics,
// by the go-metrics key raft emits them under, with the name they get
// there. Raft emits some forty; these answer "is replication to each
// follower keeping up, and how long does a write wait for its quorum".
// The rest are dropped: most repeat a vidfarm series (vidfarm_fsm_*,
// vidfarm_raft_term, vidfarm_raft_last_contact_seconds), and raft's
// camelCase names in milliseconds would fail promtool's lint, which the
// whole page passes (TestFSMMetrics). Every one is a timer, made a
// histogram in seconds (TimerGranularity below), but the counter, whose
// name says so. Histograms, not go-metrics' own summaries: a summary's
// quantiles cover its last 10 s on one member and cannot be added across
// members or taken over a longer window; buckets can.
var raftSeries = map[string]struct {
	name, help string
	peer       bool      // labelled by the follower (peer_id)
	buckets    []float64 // nil: a counter
}{
	"raft.commitTime": {name: "vidfarm_raft_commit_seconds", buckets: raftRPCBuckets,
		help: "On the leader, from writing an entry to its log to a quorum having it: what every write waits for before it is applied."},
	"raft.leader.dispatchLog": {name: "vidfarm_raft_leader_dispatch_seconds", buckets: raftRPCBuckets,
		help: "On the leader, writing a batch of entries to its own log (the leader's disk)."},
	"raft.rpc.appendEntries.storeLogs": {name: "vidfarm_raft_follower_store_seconds", buckets: raftRPCBuckets,
		help: "On a follower, writing the entries the leader sent to its log (the follower's disk)."},
	"raft.replication.appendEntries.rpc": {name: "vidfarm_raft_replication_append_entries_seconds", peer: true, buckets: raftRPCBuckets,
		help: "On the leader, the round trip of an append to one follower (peer_id): entries sent, stored and acknowledged."},
	"raft.replication.appendEntries.logs": {name: "vidfarm_raft_replication_append_entries_logs_total", peer: true,
		help: "On the leader, the entries sent to one follower (peer_id)."},
	"raft.replication.heartbeat": {name: "vidfarm_raft_replication_heartbeat_seconds", peer: true, buckets: raftRPCBuckets,
		help: "On the leader, the round trip of a heartbeat to one follower (peer_id)."},
	"raft.replication.installSnapshot": {name: "vidfarm_raft_replication_install_snapshot_seconds", peer: true, buckets: raftSnapshotBuckets,
		help: "On the leader, sending a snapshot to one follower (peer_id) too far behind for the log."},
}

// The buckets: 0.25 ms to 8 s for a disk write or a round trip (an fsync
// on a fast disk to a stalled one), 10 ms to 11 minutes for a snapshot.
var (
	raftRPCBuckets      = prometheus.ExponentialBuckets(0.00025, 2, 16)
	raftSnapshotBuckets = prometheus.ExponentialBuckets(0.01, 2, 17)
)

// raftSink takes raft's measurements from go-metrics' global, keeps those
// of raftSeries under their names and drops the others. It is the
// Prometheus collector of them too.
type raftSink struct {
	hists    map[string]*prometheus.HistogramVec // by raft's key
	counters map[string]*prometheus.CounterVec
}

var (
	_ gometrics.MetricSink = (*raftSink)(nil)
	_ prometheus.Collector = (*raftSink)(nil)
)

// raftSeriesGroups are the second parts of raftSeries' keys. Raft calls
// the sink on every Apply (raft.apply) and at every commit with keys it
// drops; they are told apart by this part before the key is joined, which
// allocates.
var raftSeriesGroups = map[string]bool{"commitTime": true, "leader": true, "rpc": true, "replication": true}

// kept is raft's key joined, when raftSeries keeps it.
func kept(key []string) (string, bool) {
	if len(key) < 2 || !raftSeriesGroups[key[1]] {
		return "", false
	}
	k := strings.Join(key, ".")
	_, ok := raftSeries[k]
	return k, ok
}

// labelValues are the values of the series' labels: the peer's id, or
// none. A series raft labels otherwise than expected is dropped (ok false)
// rather than given a label the page does not declare.
func labelValues(k string, labels []gometrics.Label) ([]string, bool) {
	if !raftSeries[k].peer {
		return nil, len(labels) == 0
	}
	for _, l := range labels {
		if l.Name == "peer_id" {
			return []string{l.Value}, true
		}
	}
	return nil, false
}

func (s *raftSink) SetGauge(key []string, val float32) {}
func (s *raftSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
}
func (s *raftSink) EmitKey(key []string, val float32) {}
func (s *raftSink) IncrCounter(key []string, val float32) {
	s.IncrCounterWithLabels(key, val, nil)
}
func (s *raftSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	k, ok := kept(key)
	if !ok || s.counters[k] == nil {
		return
	}
	if lv, ok := labelValues(k, labels); ok {
		s.counters[k].WithLabelValues(lv...).Add(float64(val))
	}
}
func (s *raftSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }
func (s *raftSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	k, ok := kept(key)
	if !ok || s.hists[k] == nil {
		return
	}
	if lv, ok := labelValues(k, labels); ok {
		s.hists[k].WithLabelValues(lv...).Observe(float64(val))
	}
}

func (s *raftSink) Describe(ch chan<- *prometheus.Desc) {
	for _, h := range s.hists {
		h.Describe(ch)
	}
	for _, c := range s.counters {
		c.Describe(ch)
	}
}

func (s *raftSink) Collect(ch chan<- prometheus.Metric) {
	for _, h := range s.hists {
		h.Collect(ch)
	}
	for _, c := range s.counters {
		c.Collect(ch)
	}
}

var raftMetricsOnce = sync.OnceValue(newRaftMetrics)

// raftMetrics is the collector of Raft's own measurements, the same one for
// every server in the process. hashicorp/raft reports through go-metrics'
// process-wide global (the compat package, which is armon/go-metrics unless
// built with the hashicorpmetrics tag; importing compat here follows the
// same tag), not through the raft.Raft it measures, so which node took a
// measurement is lost: one sink per server could not tell them apart. So
// the global is set once, to one sink, and every server registers that
// sink in its own registry. A production process runs one server and its
// page is exact; in tests that start several in one process each page
// shows all of theirs. Series stay when they stop moving (a removed
// follower's until the process restarts: a few lines), so rate() over a
// quiet cluster's is 0, not absent.
func raftMetrics() prometheus.Collector { return raftMetricsOnce() }

func newRaftMetrics() prometheus.Collector {
	s := newRaftSink()
	conf := gometrics.DefaultConfig("")
	conf.EnableHostname = false       // a hostname prefix would make a name per host
	conf.EnableRuntimeMetrics = false // the Go collector reports the runtime already
	conf.TimerGranularity = time.Second
	if _, err := gometrics.NewGlobal(conf, s); err != nil {
		panic(err) // go-metrics never returns one
	}
	return s
}

func newRaftSink() *raftSink {
	s := &raftSink{hists: map[string]*prometheus.HistogramVec{}, counters: map[string]*prometheus.CounterVec{}}
	for k, sr := range raftSeries {
		var labels []string
		if sr.peer {
			labels = []string{"peer_id"}
		}
		if sr.buckets == nil {
			s.counters[k] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: sr.name, Help: sr.help}, labels)
			continue
		}
		s.hists[k] = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: sr.name, Help: sr.help, Buckets: sr.buckets}, labels)
	}
	return s
}
