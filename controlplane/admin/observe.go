package admin

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// metrics count the admin API's requests. Every admin route is privileged
// (accounts, credits, failing videos, restore): an operator must be able to
// see who changed what and when, and alert on refused tokens.
type metrics struct {
	requests *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vidfarm_admin_requests_total",
		Help: "Admin API requests on this member by method, route and HTTP status (401: a missing or wrong admin token).",
	}, []string{"method", "route", "status"})}
	if reg != nil {
		reg.MustRegister(m.requests)
	}
	return m
}

// observe counts every admin request and logs it as one structured line:
// at info for a request that may change state, so the log is the audit
// trail of what operators did; at debug for reads, which Prometheus's
// scrapes of /metrics would otherwise flood it with. The line names the
// path but never the query, the body or the Authorization header.
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &apierr.StatusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.Status == 0 {
			sw.Status = http.StatusOK // the handler wrote nothing: net/http answers 200
		}
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.metrics.requests.WithLabelValues(apierr.MethodLabel(r.Method), route, strconv.Itoa(sw.Status)).Inc()
		lvl := slog.LevelInfo
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			lvl = slog.LevelDebug
		}
		s.cfg.Logger.LogAttrs(r.Context(), lvl, "admin request",
			slog.String("request_id", apierr.RequestID(r.Context())), slog.String("method", r.Method),
			slog.String("route", route), slog.String("path", r.URL.Path), slog.Int("status", sw.Status),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000))
	})
}
