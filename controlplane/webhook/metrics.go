package webhook

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// Metrics are the deliverer's Prometheus metrics.
type Metrics struct {
	attempts *prometheus.CounterVec
	latency  prometheus.Histogram
	ended    *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg, and gauges of pending deliveries
// and disabled endpoints read from st at scrape time.
func NewMetrics(reg prometheus.Registerer, st State) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vidfarm_webhook_attempts_total",
			Help: "Webhook delivery attempts by result (delivered, failed) and HTTP status (0: no answer).",
		}, []string{"result", "status"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vidfarm_webhook_attempt_duration_seconds", Help: "Time from sending a delivery to the receiver's answer.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vidfarm_webhook_deliveries_finished_total", Help: "Webhook deliveries that ended, by state (delivered, abandoned).",
		}, []string{"state"}),
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vidfarm_webhook_deliveries_pending", Help: "Webhook deliveries waiting for an attempt.",
	}, func() float64 { return float64(st.PendingDeliveries()) })
	disabled := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vidfarm_webhook_endpoints_disabled",
		Help: "Webhook endpoints disabled because every attempt failed for days; nothing is sent to them until their owner enables them.",
	}, func() float64 { return float64(st.DisabledWebhooks()) })
	// Both ends exist at 0 from the start: increase() sees no rise in a
	// series that first appears at 1, so without them the first delivery a
	// new leader abandons would never raise VidfarmWebhookDeliveriesAbandoned.
	// (Attempts are by HTTP status, which is not known ahead.)
	for _, state := range []string{fsm.DeliveryDelivered, fsm.DeliveryAbandoned} {
		m.ended.WithLabelValues(state)
	}
	reg.MustRegister(m.attempts, m.latency, m.ended, pending, disabled)
	return m
}

func (m *Metrics) observe(status int, failure string, latency time.Duration) {
	if m == nil {
		return
	}
	result := "delivered"
	if failure != "" {
		result = "failed"
	}
	m.attempts.WithLabelValues(result, strconv.Itoa(status)).Inc()
	m.latency.Observe(latency.Seconds())
}

func (m *Metrics) finished(state string) {
	if m == nil || state == fsm.DeliveryPending {
		return
	}
	m.ended.WithLabelValues(state).Inc()
}
