package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// fsmObserver turns the FSM's own measurements into Prometheus series: apply
// latency per command type, and the cost of each snapshot (the copy under
// the read lock, which holds up applies, and the streaming after it).
func fsmObserver(reg prometheus.Registerer) fsm.Observer {
	apply := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vidfarm_fsm_apply_seconds",
		Help: "Time to apply one committed command to the state machine, by command type.",
		// Applies are microseconds to a few milliseconds; the top buckets
		// catch a state that has grown slow.
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
	}, []string{"type"})
	snap := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "vidfarm_fsm_snapshot_seconds",
		Help:    "Time a snapshot took, by phase: copy (under the read lock, applies wait) or persist (streamed while applies go on).",
		Buckets: prometheus.ExponentialBuckets(1e-4, 4, 12),
	}, []string{"phase"})
	size := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vidfarm_fsm_snapshot_bytes",
		Help: "Bytes the last snapshot wrote: the whole state without a state file; with one, the checkpoint's hot state and newly finished videos.",
	})
	pages := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "vidfarm_state_file_pages_written_total",
		Help: "Pages the checkpoints wrote to the state file (4 KiB each on most machines): each changed page is written whole.",
	})
	// The phases exist at 0 from the start: a series that first appears
	// at count 1 has no increase() over the window, and the dashboard's
	// "Snapshot duration" would show 0/0 until a member's second snapshot.
	// The apply histogram's types are left to appear as they are applied:
	// a histogram per command type, most never applied by a farm, would
	// cost hundreds of series for the first apply of each.
	for _, phase := range []string{"copy", "persist"} {
		snap.WithLabelValues(phase)
	}
	reg.MustRegister(apply, snap, size, pages)
	return fsm.Observer{
		Applied: func(t fsm.MessageType, d time.Duration) {
			apply.WithLabelValues(t.String()).Observe(d.Seconds())
		},
		Snapshot: func(phase string, d time.Duration, bytes int64) {
			snap.WithLabelValues(phase).Observe(d.Seconds())
			if phase == "persist" {
				size.Set(float64(bytes))
			}
		},
		Written: func(n int64) { pages.Add(float64(n)) },
	}
}
