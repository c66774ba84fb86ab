package admin

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// snapNode takes snapshots and nothing else.
type snapNode struct{}

func (snapNode) Apply(context.Context, fsm.Command) (any, error) { return nil, nil }
func (snapNode) Snapshot() error                                 { return nil }
func (snapNode) Stats() map[string]string                        { return nil }

var _ Node = snapNode{}

// counterValue is the admin request counter's value for the labels, 0 when
// it has no such series.
func counterValue(t *testing.T, reg *prometheus.Registry, method, route, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vidfarm_admin_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labels(m) == "method="+method+",route="+route+",status="+status {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

// TestAdminRequestsLoggedAndCounted: a request that changes state leaves
// one info line with its route and the request id the caller got, and is
// counted; a scrape of /metrics is counted but logs nothing at info; a
// refused token is counted as 401 and logged as a warning with its remote
// address, a read's too; the token and the body never reach the log; a method outside HTTP's is counted as "other".
func TestAdminRequestsLoggedAndCounted(t *testing.T) {
	const token = "s3cret-admin"
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer // the handler logs before ServeHTTP returns
	h := Handler(Config{Token: token, FSM: fsm.New(), Node: snapNode{}, Gatherer: reg, Registerer: reg,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})

	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		route, methodLabel             string
		logged                         bool // at info
	}{
		{"a snapshot", http.MethodPost, "/admin/v1/snapshot", "Bearer " + token, "", 200, "/admin/v1/snapshot", "POST", true},
		{"a bad account create", http.MethodPost, "/admin/v1/accounts", "Bearer " + token, `{"credits":"many-SECRET-BODY"}`, 400, "/admin/v1/accounts", "POST", true},
		{"a write with a wrong token", http.MethodPost, "/admin/v1/accounts/acct_1/credits", "Bearer wrong-TOKEN-GUESS", "", 401, "/admin/v1/accounts/{id}/credits", "POST", true},
		{"a scrape", http.MethodGet, "/metrics", "Bearer " + token, "", 200, "/metrics", "GET", false},
		{"a read with a wrong token", http.MethodGet, "/admin/v1/status", "Bearer wrong-TOKEN-GUESS", "", 401, "/admin/v1/status", "GET", true},
		{"a method HTTP does not define", "WEIRDMETHOD123", "/admin/v1/snapshot", "Bearer " + token, "", 405, "unmatched", "other", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := logs.String()
			beforeCount := counterValue(t, reg, tc.methodLabel, tc.route, strconv.Itoa(tc.status))
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			r.Header.Set("Authorization", tc.auth)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.status {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, rec.Code, tc.status, rec.Body)
			}
			if got := counterValue(t, reg, tc.methodLabel, tc.route, strconv.Itoa(tc.status)); got != beforeCount+1 {
				t.Errorf("vidfarm_admin_requests_total{method=%q,route=%q,status=\"%d\"} = %v, want %v", tc.methodLabel, tc.route, tc.status, got, beforeCount+1)
			}
			added := strings.TrimPrefix(logs.String(), before)
			if !tc.logged {
				if added != "" {
					t.Fatalf("a read logged at info: %s", added)
				}
				return
			}
			id := rec.Header().Get("X-Request-Id")
			if id == "" || strings.Count(added, `"msg":"admin request"`) != 1 ||
				!strings.Contains(added, `"request_id":"`+id+`"`) || !strings.Contains(added, `"route":"`+tc.route+`"`) ||
				!strings.Contains(added, `"status":`+strconv.Itoa(tc.status)) || !strings.Contains(added, `"duration_ms":`) {
				t.Fatalf("want one info line with request_id %q, route %q and status %d; logged:\n%s", id, tc.route, tc.status, added)
			}
			// A refused token is a warning, whatever the method, with the
			// address it came from (httptest's 192.0.2.1:1234).
			if refused := tc.status == http.StatusUnauthorized; refused != strings.Contains(added, `"level":"WARN"`) ||
				refused != strings.Contains(added, `"remote":"192.0.2.1:1234"`) {
				t.Fatalf("a %d logged with the wrong level or address:\n%s", tc.status, added)
			}
			for _, secret := range []string{token, "TOKEN-GUESS", "SECRET-BODY"} {
				if strings.Contains(added, secret) {
					t.Fatalf("the log holds %q:\n%s", secret, added)
				}
			}
		})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if strings.Contains(labels(m), "WEIRD") {
				t.Errorf("%s has a series for the raw method: %s", mf.GetName(), labels(m))
			}
		}
	}
}

// TestAdminRefusalsCounted: what the forwarder in front of the admin API
// refuses is counted with the API's own requests, under the route
// "forward", whichever of the two registers the counter first.
func TestAdminRefusalsCounted(t *testing.T) {
	for _, handlerFirst := range []bool{true, false} {
		reg := prometheus.NewRegistry()
		var refused func(*http.Request, int, time.Duration)
		if !handlerFirst {
			refused = ObserveRefused(reg)
		}
		h := Handler(Config{Token: "t", FSM: fsm.New(), Node: snapNode{}, Gatherer: reg, Registerer: reg})
		if handlerFirst {
			refused = ObserveRefused(reg)
		}
		refused(httptest.NewRequest(http.MethodPost, "/admin/v1/accounts", nil), http.StatusServiceUnavailable, 0)
		r := httptest.NewRequest(http.MethodPost, "/admin/v1/snapshot", nil)
		r.Header.Set("Authorization", "Bearer t")
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got := counterValue(t, reg, "POST", RouteForward, "503"); got != 1 {
			t.Errorf("handler first %v: the refusal counted %v, want 1", handlerFirst, got)
		}
		if got := counterValue(t, reg, "POST", "/admin/v1/snapshot", "200"); got != 1 {
			t.Errorf("handler first %v: the snapshot counted %v, want 1", handlerFirst, got)
		}
	}
}
