package api

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}
