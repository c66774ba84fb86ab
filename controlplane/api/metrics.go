package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// streams counts open event streams; resyncs the streams that went on
	// from a video's current state instead of its history.
	streams prometheus.Gauge
	resyncs prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vidfarm_api_requests_total", Help: "Public API requests by route, method and HTTP status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vidfarm_api_request_duration_seconds", Help: "Public API request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route", "method"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vidfarm_api_event_streams", Help: "Open GET /v1/videos/{id}/events streams on this node.",
		}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vidfarm_api_event_stream_resyncs_total",
			Help: "Event streams that went on from the video's current state because this node could not list the changes the client missed.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.streams, m.resyncs)
	}
	return m
}

// observe counts one request. The method label is folded
// (apierr.MethodLabel): any client may send any method token.
func (m *metrics) observe(method, route string, status int, d time.Duration) {
	method = apierr.MethodLabel(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// RouteForward is the route label of the public requests that the
// forwarder in front of the API (cluster.Forwarder, on a follower) answered
// itself, with a 503 while no leader is known or the leader does not
// answer. A label of its own tells them apart from the leader's answers on
// the same route; the forwarder's log line names the path.
const RouteForward = "forward"

// ObserveRefused counts a request the forwarder in front of the API refused
// (cluster.Forwarder.Refused): it never reached observe, and without it an
// election's 503s would be missing from vidfarm_api_requests_total.
func (a *API) ObserveRefused(r *http.Request, status int, d time.Duration) {
	a.metrics.observe(r.Method, RouteForward, status, d)
}
