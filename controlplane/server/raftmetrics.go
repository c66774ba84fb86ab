package server

import (
	"strings"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raftSeries are the measurements of hashicorp/raft that reach /metrics,
// by the go-metrics key raft emits them under, with the name they get
// there. Raft emits some forty; these answer "is replication to each
// follower keeping up, and how long does a write wait for its quorum".
// The rest are dropped: most repeat a vidfarm series (vidfarm_fsm_*,
// vidfarm_raft_term, vidfarm_raft_last_contact_seconds), and raft's
// camelCase names in milliseconds would fail promtool's lint, which the
// whole page passes (TestFSMMetrics). Every one is a timer, which the
// sink makes a summary, in seconds (TimerGranularity below), but the
// counter, whose name says so.
var raftSeries = map[string]struct {
	name string
	// help is given where the series has no labels: the sink takes help
	// text only by declaring a series up front, which a series per
	// follower cannot be.
	help string
}{
	"raft.commitTime": {"vidfarm_raft_commit_seconds",
		"On the leader, from writing an entry to its log to a quorum having it: what every write waits for before it is applied (summary: quantiles over the last 10 s)."},
	"raft.leader.dispatchLog": {"vidfarm_raft_leader_dispatch_seconds",
		"On the leader, writing a batch of entries to its own log (the leader's disk)."},
	"raft.rpc.appendEntries.storeLogs": {"vidfarm_raft_follower_store_seconds",
		"On a follower, writing the entries the leader sent to its log (the follower's disk)."},
	"raft.replication.appendEntries.rpc":  {name: "vidfarm_raft_replication_append_entries_seconds"},
	"raft.replication.appendEntries.logs": {name: "vidfarm_raft_replication_append_entries_logs_total"},
	"raft.replication.heartbeat":          {name: "vidfarm_raft_replication_heartbeat_seconds"},
	"raft.replication.installSnapshot":    {name: "vidfarm_raft_replication_install_snapshot_seconds"},
}

// raftSink renames raft's keys (raftSeries) and drops the others on their
// way to go-metrics' own Prometheus sink.
type raftSink struct{ to *gmprom.PrometheusSink }

var _ gometrics.MetricSink = raftSink{}

// raftSeriesGroups are the second parts of raftSeries' keys. Raft calls
// the sink on every Apply (raft.apply) and at every commit with keys it
// drops; they are told apart by this part before the key is joined, which
// allocates.
var raftSeriesGroups = map[string]bool{"commitTime": true, "leader": true, "rpc": true, "replication": true}

func (s raftSink) series(key []string) (string, bool) {
	if len(key) < 2 || !raftSeriesGroups[key[1]] {
		return "", false
	}
	sr, ok := raftSeries[strings.Join(key, ".")]
	return sr.name, ok
}

func (s raftSink) SetGauge(key []string, val float32) {}
func (s raftSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
}
func (s raftSink) EmitKey(key []string, val float32) {}
func (s raftSink) IncrCounter(key []string, val float32) {
	s.IncrCounterWithLabels(key, val, nil)
}
func (s raftSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	if name, ok := s.series(key); ok {
		s.to.IncrCounterWithLabels([]string{name}, val, labels)
	}
}
func (s raftSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }
func (s raftSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	if name, ok := s.series(key); ok {
		s.to.AddSampleWithLabels([]string{name}, val, labels)
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
// shows all of theirs.
func raftMetrics() prometheus.Collector { return raftMetricsOnce() }

func newRaftMetrics() prometheus.Collector {
	var defs []gmprom.SummaryDefinition
	for _, sr := range raftSeries {
		if sr.help != "" {
			defs = append(defs, gmprom.SummaryDefinition{Name: []string{sr.name}, Help: sr.help})
		}
	}
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		// Series stay when they stop moving: a quiet cluster's (or a down
		// follower's) would otherwise vanish and break rate() over their
		// _sum and _count. The cost, a removed follower's series until the
		// process restarts, is a few lines.
		Expiration:         0,
		SummaryDefinitions: defs,
		Name:               "vidfarm_raft_go_metrics",
		// The sink registers itself where it is told; each server
		// registers it in its own registry instead (raftMetrics).
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		// Only a second registration in that fresh registry fails.
		panic(err)
	}
	conf := gometrics.DefaultConfig("")
	conf.EnableHostname = false       // a hostname prefix would make a name per host
	conf.EnableRuntimeMetrics = false // the Go collector reports the runtime already
	conf.TimerGranularity = time.Second
	if _, err := gometrics.NewGlobal(conf, raftSink{sink}); err != nil {
		panic(err) // go-metrics never returns one
	}
	return sink
}
