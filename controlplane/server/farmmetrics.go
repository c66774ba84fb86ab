package server

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

// farmCollector exports, at scrape time, what an operator alerts on and the
// state collector does not say: the nodes and their GPUs by state, how long
// the queued work has waited, and the room left on the data directory's
// disk. The first two come from the replicated state, so every member
// reports the same figures (dashboards take max over members); the disk is
// this member's own.
type farmCollector struct {
	f       *fsm.FSM
	dataDir string
	now     func() time.Time
	log     *slog.Logger
}

var (
	nodesDesc = prometheus.NewDesc("vidfarm_nodes",
		"Registered render nodes by state: live (takes work), draining (finishes its leases, takes nothing new: its agent drains, or an operator cordoned or drained it) or down (silent past the node timeout).",
		[]string{"state"}, nil)
	nodeGPUsDesc = prometheus.NewDesc("vidfarm_node_gpus",
		"GPUs of the registered nodes by state: busy (held by a lease), idle (free on a live node) or unavailable (free, but on a draining or down node).",
		[]string{"state"}, nil)
	queueAgeDesc = prometheus.NewDesc("vidfarm_queue_age_seconds",
		"How long the tasks waiting for placement have waited, by task kind and model (empty for CPU work): the distribution now, not over time, so quantiles need no rate().",
		[]string{"kind", "model"}, nil)
	dataDirAvailDesc = prometheus.NewDesc("vidfarm_data_dir_avail_bytes",
		"Bytes free for the control plane on the filesystem of its data directory (Raft log, snapshots, state file).", nil, nil)
	dataDirSizeDesc = prometheus.NewDesc("vidfarm_data_dir_size_bytes",
		"Size of the filesystem that holds the data directory.", nil, nil)
)

// queueAgeBuckets (seconds) run from a second to a day: an interactive SLO
// sits in the first minutes, a backlog after an outage in the hours.
var queueAgeBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400}

func (c *farmCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *farmCollector) Collect(ch chan<- prometheus.Metric) {
	nodes, gpus := nodeCounts(c.f.Nodes())
	for _, state := range []string{"live", "draining", "down"} {
		ch <- prometheus.MustNewConstMetric(nodesDesc, prometheus.GaugeValue, float64(nodes[state]), state)
	}
	for _, state := range []string{"busy", "idle", "unavailable"} {
		ch <- prometheus.MustNewConstMetric(nodeGPUsDesc, prometheus.GaugeValue, float64(gpus[state]), state)
	}
	for key, h := range queueAges(c.f.EachReadyTask, c.now()) {
		ch <- prometheus.MustNewConstHistogram(queueAgeDesc, h.count, h.sum, h.cumulative(), string(key.kind), key.model)
	}
	avail, size, err := diskSpace(c.dataDir)
	if err != nil {
		c.log.Warn("data directory disk space unknown", "dir", c.dataDir, "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(dataDirAvailDesc, prometheus.GaugeValue, float64(avail))
	ch <- prometheus.MustNewConstMetric(dataDirSizeDesc, prometheus.GaugeValue, float64(size))
}

// nodeCounts counts nodes and their GPUs by the states vidfarm_nodes and
// vidfarm_node_gpus export. A down node counts as down even while it drains:
// it is the loss an operator must hear about.
func nodeCounts(views []fsm.NodeView) (nodes, gpus map[string]int) {
	nodes, gpus = map[string]int{}, map[string]int{}
	for _, v := range views {
		idle := len(v.Info.IdleGPUs)
		gpus["busy"] += len(v.Info.GPUs) - idle
		switch {
		case v.Info.Down:
			nodes["down"]++
			gpus["unavailable"] += idle
		case v.Info.Draining, v.Info.Cordoned: // the agent's drain, or the operator's cordon or drain
			nodes["draining"]++
			gpus["unavailable"] += idle
		default:
			nodes["live"]++
			gpus["idle"] += idle
		}
	}
	return nodes, gpus
}

type queueKey struct {
	kind  scheduler.Kind
	model string
}

// ageHistogram counts waits per bucket (not yet cumulative).
type ageHistogram struct {
	perBucket []uint64 // len(queueAgeBuckets); waits over the last bound count only in count
	count     uint64
	sum       float64
}

func (h *ageHistogram) cumulative() map[float64]uint64 {
	out := make(map[float64]uint64, len(queueAgeBuckets))
	var n uint64
	for i, le := range queueAgeBuckets {
		n += h.perBucket[i]
		out[le] = n
	}
	return out
}

// queueAges buckets the waits of the ready tasks each visits, as of now. A
// task made ready by a leader whose clock runs ahead of this member's counts
// as having waited zero.
func queueAges(each func(func(scheduler.Kind, string, time.Time)), now time.Time) map[queueKey]*ageHistogram {
	out := map[queueKey]*ageHistogram{}
	// Tasks come an account queue at a time, so runs share a key: the last
	// one saves a map lookup per task while the FSM's read lock is held.
	var last queueKey
	var h *ageHistogram
	each(func(kind scheduler.Kind, model string, readyAt time.Time) {
		if k := (queueKey{kind, model}); h == nil || k != last {
			if h = out[k]; h == nil {
				h = &ageHistogram{perBucket: make([]uint64, len(queueAgeBuckets))}
				out[k] = h
			}
			last = k
		}
		age := max(now.Sub(readyAt).Seconds(), 0)
		h.count++
		h.sum += age
		for i, le := range queueAgeBuckets {
			if age <= le {
				h.perBucket[i]++
				break
			}
		}
	})
	return out
}
