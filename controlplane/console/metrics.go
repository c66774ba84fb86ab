package console

import "github.com/prometheus/client_golang/prometheus"

// metrics are what the console exports on the admin listener's /metrics:
// refused logins are what an alert on guessing the admin token watches.
type metrics struct {
	logins  *prometheus.CounterVec
	actions *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, s *sessions) *metrics {
	m := &metrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vidfarm_console_logins_total",
			Help: "Console logins on this member by result: ok, refused (wrong admin token) or throttled (too many wrong ones from the address)."}, []string{"result"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vidfarm_console_actions_total",
			Help: "Node maintenance requested from the console on this member, by action (cordon, drain, uncordon) and result (ok, failed)."},
			[]string{"action", "result"}),
	}
	for _, r := range []string{"ok", "refused", "throttled"} {
		m.logins.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.logins, m.actions, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vidfarm_console_sessions",
			Help: "Console sessions this member holds (some may have expired unseen since the last login)."}, s.count))
	}
	return m
}
