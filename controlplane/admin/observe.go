package admin

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// metrics count the admin API's requests. Every admin route is privileged
// (accounts, credits, failing videos, restore): an operator must be able to
// see who changed what and when, and alert on refused tokens.
type metrics struct{ requests apierr.Requests }

// newMetrics registers the counter in reg, or takes the one already there:
// the handler and ObserveRefused share it.
func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{requests: apierr.NewRequests(reg, "vidfarm_admin_requests_total",
		"Admin API requests on this member by method, route and HTTP status (401: a missing or wrong admin token; route \"forward\": refused by a follower before forwarding, no leader).")}
}

// RouteForward is the route label of the admin requests that the forwarder
// in front of the admin API (cluster.Forwarder, on a follower) answered
// itself, with a 503 while no leader is known or the leader does not
// answer.
const RouteForward = "forward"

// ObserveRefused returns the hook (cluster.Forwarder.Refused) that counts
// the admin requests the forwarder refused in reg's
// vidfarm_admin_requests_total: they never reach observe, and an
// election's 503s would be missing from it. The forwarder logs them.
func ObserveRefused(reg prometheus.Registerer) func(r *http.Request, status int, d time.Duration) {
	m := newMetrics(reg)
	return func(r *http.Request, status int, _ time.Duration) {
		m.requests.Observe(r.Method, RouteForward, status)
	}
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
		route, status := apierr.Route(r), sw.Code()
		d := time.Since(start)
		s.metrics.requests.Observe(r.Method, route, status)
		lvl := slog.LevelInfo
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			lvl = slog.LevelDebug
		}
		attrs := []slog.Attr{slog.String("request_id", apierr.RequestID(r.Context())), slog.String("method", r.Method),
			slog.String("route", route), slog.String("path", r.URL.Path), slog.Int("status", status),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000)}
		if status == http.StatusUnauthorized {
			// A refused token, whatever the method: someone is guessing, or
			// a client (a Prometheus, a script) holds an old token. Where it
			// came from is what the operator needs (VidfarmRefusedTokens).
			lvl = slog.LevelWarn
			attrs = append(attrs, slog.String("remote", r.RemoteAddr))
		}
		s.cfg.Logger.LogAttrs(r.Context(), lvl, "admin request", attrs...)
	})
}
