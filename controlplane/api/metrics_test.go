package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// seriesOf lists the label sets of the named metric family, as
// "name=value,..." strings.
func seriesOf(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var parts []string
			for _, l := range m.GetLabel() {
				parts = append(parts, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[strings.Join(parts, ",")] = v
		}
	}
	return out
}

func newMetricsAPI(t *testing.T) (*api.API, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	a, err := api.New(api.Config{FSM: fsm.New(), Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, reg
}

// TestRequestMetricsFoldUnknownMethods: any token is a method to net/http,
// and it reaches the metrics before authentication; each must not make a
// series of its own, or one unauthenticated loop grows /metrics without
// bound. HTTP's own methods keep their names.
func TestRequestMetricsFoldUnknownMethods(t *testing.T) {
	a, reg := newMetricsAPI(t)
	for _, m := range []string{"WEIRDMETHOD123", "WEIRDMETHOD124", "PROPFIND", "get", http.MethodDelete} {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(m, "/v1/videos", nil))
		if rec.Code < 400 {
			t.Fatalf("%s /v1/videos: %d, want a refusal", m, rec.Code)
		}
	}
	for _, name := range []string{"vidfarm_api_requests_total", "vidfarm_api_request_duration_seconds"} {
		series := seriesOf(t, reg, name)
		methods := map[string]float64{}
		for labels, v := range series {
			for _, l := range strings.Split(labels, ",") {
				if m, ok := strings.CutPrefix(l, "method="); ok {
					methods[m] += v
				}
			}
		}
		if len(methods) != 2 || methods["other"] != 4 || methods["DELETE"] != 1 {
			t.Errorf("%s by method: %v, want other 4 and DELETE 1 (series %v)", name, methods, series)
		}
	}
}

// TestObserveRefused: what the forwarder in front of the API refused is
// counted in the API's request metrics under the route "forward".
func TestObserveRefused(t *testing.T) {
	a, reg := newMetricsAPI(t)
	a.ObserveRefused(httptest.NewRequest(http.MethodPost, "/v1/videos", nil), http.StatusServiceUnavailable, 3*time.Millisecond)
	a.ObserveRefused(httptest.NewRequest("WEIRDMETHOD123", "/v1/videos", nil), http.StatusServiceUnavailable, time.Millisecond)
	want := map[string]float64{
		"method=POST,route=forward,status=503":  1,
		"method=other,route=forward,status=503": 1,
	}
	got := seriesOf(t, reg, "vidfarm_api_requests_total")
	if len(got) != len(want) {
		t.Fatalf("vidfarm_api_requests_total: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("vidfarm_api_requests_total: %v, want %v", got, want)
		}
	}
	if lat := seriesOf(t, reg, "vidfarm_api_request_duration_seconds"); lat["method=POST,route=forward"] != 1 {
		t.Fatalf("vidfarm_api_request_duration_seconds: %v, want one POST on route forward", lat)
	}
}
