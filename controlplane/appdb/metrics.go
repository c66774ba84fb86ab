package appdb

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the bridge's Prometheus collectors; register them with Register.
type Metrics struct {
	b           *Bridge
	applied     prometheus.Counter
	quarantined prometheus.Counter
	exported    prometheus.Counter
	errors      prometheus.Counter
	lag         *prometheus.Desc
	pending     *prometheus.Desc
	held        *prometheus.Desc
	up          *prometheus.Desc
}

func newMetrics(b *Bridge) *Metrics {
	return &Metrics{
		b:           b,
		applied:     prometheus.NewCounter(prometheus.CounterOpts{Name: "vidfarm_appdb_rows_applied_total", Help: "App rows applied to the FSM."}),
		quarantined: prometheus.NewCounter(prometheus.CounterOpts{Name: "vidfarm_appdb_rows_quarantined_total", Help: "App rows refused and quarantined."}),
		exported:    prometheus.NewCounter(prometheus.CounterOpts{Name: "vidfarm_appdb_rows_exported_total", Help: "Ledger entries and video events written to the app database."}),
		errors:      prometheus.NewCounter(prometheus.CounterOpts{Name: "vidfarm_appdb_errors_total", Help: "Bridge steps that failed (Postgres down, say)."}),
		lag: prometheus.NewDesc("vidfarm_appdb_lag_seconds", "Age of the oldest app row not applied (inbound) or movement not exported (outbound).",
			[]string{"direction"}, nil),
		pending: prometheus.NewDesc("vidfarm_appdb_outbound_pending", "Ledger entries and video events waiting for export.", nil, nil),
		held: prometheus.NewDesc("vidfarm_appdb_inbound_held_rows",
			"App rows committed but waiting behind a transaction of the app database that began before them and is still open (the log names it).", nil, nil),
		up: prometheus.NewDesc("vidfarm_appdb_connected", "1 when the bridge's last step reached the app database (0 on a member that is not the leader, where it does not run).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range []prometheus.Collector{m.applied, m.quarantined, m.exported, m.errors} {
		c.Describe(ch)
	}
	ch <- m.lag
	ch <- m.pending
	ch <- m.held
	ch <- m.up
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []prometheus.Collector{m.applied, m.quarantined, m.exported, m.errors} {
		c.Collect(ch)
	}
	st := m.b.Status()
	ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, st.InboundLagSeconds, "inbound")
	ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, st.OutboundLagSeconds, "outbound")
	ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(st.OutboundPending))
	ch <- prometheus.MustNewConstMetric(m.held, prometheus.GaugeValue, float64(st.InboundHeldRows))
	up := 0.0
	if st.Connected {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, up)
}
