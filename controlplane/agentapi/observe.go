package agentapi

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// metrics count the agent listener's requests: an operator sees agents
// refused (401 after a deregistration, 409 stale leases, 503 in an
// election) without reading the logs.
type metrics struct{ apierr.Requests }

// newMetrics registers the counter in reg, or takes the one already there:
// the handler and ObserveRefused share it.
func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{apierr.NewRequests(reg, "vidfarm_agentapi_requests_total",
		"Agent API requests on this member (the agent listener) by method, route and HTTP status; route \"forward\": refused by a follower before forwarding (no leader).")}
}

func (m *metrics) observe(method, route string, status int) { m.Observe(method, route, status) }

// sweepMetrics count what the upload sweeper (blobs_leases.go) deleted and
// could not: files a lease uploaded that no completion listed, which would
// otherwise only be seen in the log.
type sweepMetrics struct {
	files, bytes, failed prometheus.Counter
}

func newSweepMetrics(reg prometheus.Registerer) sweepMetrics {
	return sweepMetrics{
		files: counter(reg, "vidfarm_agentapi_unlisted_uploads_deleted_total",
			"Files a render node uploaded under a lease that no completion listed, deleted by this member once the lease ended."),
		bytes: counter(reg, "vidfarm_agentapi_unlisted_upload_bytes_deleted_total",
			"Bytes of the files counted by vidfarm_agentapi_unlisted_uploads_deleted_total."),
		failed: counter(reg, "vidfarm_agentapi_unlisted_upload_delete_failures_total",
			"Deletes of such files the blob store refused; each is tried again at the next sweep."),
	}
}

func counter(reg prometheus.Registerer, name, help string) prometheus.Counter {
	return apierr.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

// RouteForward is the route label of the agent requests that the forwarder
// in front of this API (cluster.Forwarder, on a follower) answered itself,
// with a 503 while no leader is known or the leader does not answer.
const RouteForward = "forward"

// ObserveRefused returns the hook (cluster.Forwarder.Refused) that counts
// the agent requests the forwarder refused in reg's
// vidfarm_agentapi_requests_total: they never reach the handler, and an
// election's 503s would be missing from it. The forwarder logs them.
func ObserveRefused(reg prometheus.Registerer) func(r *http.Request, status int, d time.Duration) {
	m := newMetrics(reg)
	return func(r *http.Request, status int, _ time.Duration) { m.observe(r.Method, RouteForward, status) }
}

// observe counts every request and logs it as one structured line with the
// node and task it was about.
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &apierr.StatusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route, status := apierr.Route(r), sw.Code()
		s.metrics.observe(r.Method, route, status)
		ri := info(r)
		attrs := []any{"request_id", apierr.RequestID(r.Context()),
			"method", r.Method, "route", route, "status", status,
			"duration_ms", float64(time.Since(start).Microseconds()) / 1000,
			"node_id", ri.nodeID, "task_id", ri.taskID}
		if status == http.StatusUnauthorized {
			// A refused agent token or node credential: where it came
			// from is what the operator needs (VidfarmRefusedTokens).
			attrs = append(attrs, "remote", r.RemoteAddr)
		}
		s.log.Log(r.Context(), logLevel(r, route, status), "agent request", attrs...)
	})
}

// logLevel puts what changes the farm (a node registered, a task leased,
// completed or failed, an artifact stored) at info and the agents' routine
// calls at debug: every node heartbeats every few seconds, polls for work
// and reports progress many times a task, which at info buried the changes
// an operator reads the log for. A refusal is a warning whatever the call;
// a 503 too, the retryable answer of an election (the forwarder warns of
// its own the same way), and other server errors are errors.
func logLevel(r *http.Request, route string, status int) slog.Level {
	switch {
	case status >= 500 && status != http.StatusServiceUnavailable:
		return slog.LevelError
	case status >= 400:
		return slog.LevelWarn
	}
	switch route {
	case "/agent/v1/heartbeat":
		return slog.LevelDebug
	case "/agent/v1/lease":
		if status == http.StatusNoContent { // nothing to place
			return slog.LevelDebug
		}
	case "/agent/v1/tasks/*":
		if strings.HasSuffix(r.URL.Path, "/progress") {
			return slog.LevelDebug
		}
	case "/agent/v1/blobs/*":
		if r.Method == http.MethodGet || r.Method == http.MethodHead { // inputs read
			return slog.LevelDebug
		}
	}
	return slog.LevelInfo
}
