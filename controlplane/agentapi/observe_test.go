package agentapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestAgentRequestLogLevels: the log at info says what changed (a node
// registered, a task leased and completed, an artifact stored), not the
// agents' routine calls: a progress report or a heartbeat logs nothing at
// info, unless it is refused, which is a warning. Every request is counted.
func TestAgentRequestLogLevels(t *testing.T) {
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *agentapi.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Registerer = reg
	})
	// Served in this goroutine, not over the loopback: each request's
	// lines are all written when serve returns.
	serve := func(method, path, token string, body any) (*httptest.ResponseRecorder, []map[string]any) {
		t.Helper()
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				t.Fatal(err)
			}
		}
		before := logs.Len()
		r := httptest.NewRequest(method, path, bytes.NewReader(b))
		r.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		e.srv.Config.Handler.ServeHTTP(rec, r)
		var lines []map[string]any
		for l := range strings.SplitSeq(strings.TrimSpace(logs.String()[before:]), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			lines = append(lines, m)
		}
		return rec, lines
	}
	// levels says each line's level and message.
	levels := func(lines []map[string]any) string {
		var out []string
		for _, l := range lines {
			out = append(out, fmt.Sprintf("%v %v", l["level"], l["msg"]))
		}
		return strings.Join(out, "; ")
	}
	check := func(what string, rec *httptest.ResponseRecorder, lines []map[string]any, status int, want string) {
		t.Helper()
		if rec.Code != status {
			t.Fatalf("%s: %d %s, want %d", what, rec.Code, rec.Body, status)
		}
		if got := levels(lines); got != want {
			t.Errorf("%s logged %q, want %q", what, got, want)
		}
	}

	rec, lines := serve("POST", "/agent/v1/register", agentToken, wire.RegisterRequest{Name: "gpu-logs", Capacity: capacity("gpu-logs")})
	check("a registration", rec, lines, http.StatusCreated, "INFO node registered; INFO agent request")
	var reg1 wire.RegisterResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &reg1); err != nil {
		t.Fatal(err)
	}
	cred := reg1.Credential
	e.createVideo()
	rec, lines = serve("POST", "/agent/v1/lease?wait=5", cred, wire.LeaseRequest{})
	check("a lease granted", rec, lines, http.StatusOK, "INFO task leased; INFO agent request")
	var a wire.Assignment
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}

	rec, lines = serve("POST", taskPath(a.TaskID, "progress"), cred, wire.ProgressRequest{Token: a.Token, Percent: 40})
	check("a progress report", rec, lines, http.StatusNoContent, "DEBUG agent request")
	rec, lines = serve("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Leases: []wire.LeaseReport{{TaskID: a.TaskID, Token: a.Token, Percent: 50}}})
	check("a heartbeat", rec, lines, http.StatusOK, "DEBUG agent request")
	if _, ok := lines[0]["remote"]; ok {
		t.Errorf("an accepted request logged its address: %v", lines[0])
	}
	rec, lines = serve("POST", taskPath(a.TaskID, "progress"), cred, wire.ProgressRequest{Token: a.Token + 1, Percent: 60})
	check("a stale progress report", rec, lines, http.StatusConflict, "WARN agent request")

	rec, lines = serve("POST", "/agent/v1/heartbeat", "not-a-credential", wire.HeartbeatRequest{})
	check("a heartbeat with a wrong credential", rec, lines, http.StatusUnauthorized, "WARN agent request")
	if lines[0]["remote"] != "192.0.2.1:1234" { // httptest's address
		t.Errorf("a refused credential logged without where it came from: %v", lines[0])
	}
	clip := artifactKey(a, "clip.mp4")
	rec, lines = serve("PUT", fmt.Sprintf("/agent/v1/blobs/%s?lease_token=%d", clip, a.Token), cred, []byte("frames of a fox"))
	check("an upload", rec, lines, http.StatusCreated, "INFO blob stored; INFO agent request")
	rec, lines = serve("GET", "/agent/v1/blobs/"+clip, cred, []byte(nil))
	check("a download", rec, lines, http.StatusOK, "DEBUG agent request")
	rec, lines = serve("POST", taskPath(a.TaskID, "complete"), cred, wire.CompleteRequest{Token: a.Token, Artifacts: map[string]string{"clip.mp4": clip}})
	check("a completion", rec, lines, http.StatusNoContent, "INFO task completed; INFO agent request")

	for _, c := range []struct {
		method, route, status string
		want                  float64
	}{
		{"POST", "/agent/v1/tasks/*", "204", 2},
		{"POST", "/agent/v1/tasks/*", "409", 1},
		{"POST", "/agent/v1/heartbeat", "200", 1},
		{"POST", "/agent/v1/heartbeat", "401", 1},
		{"PUT", "/agent/v1/blobs/*", "201", 1},
	} {
		got := requests(t, reg, c.method, c.route, c.status)
		if got != c.want {
			t.Errorf("vidfarm_agentapi_requests_total{method=%q,route=%q,status=%q} = %v, want %v", c.method, c.route, c.status, got, c.want)
		}
	}
}

// TestAgentRefusalsCounted: what the forwarder in front of the agent API
// refuses is counted with the API's own requests, under the route
// "forward", whichever of the two registers the counter first.
func TestAgentRefusalsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	refused := agentapi.ObserveRefused(reg)
	agentapi.Handler(agentapi.Config{Registerer: reg})
	refused(httptest.NewRequest("POST", "/agent/v1/heartbeat", nil), http.StatusServiceUnavailable, 0)
	if got := requests(t, reg, "POST", agentapi.RouteForward, "503"); got != 1 {
		t.Fatalf(`vidfarm_agentapi_requests_total{method="POST",route="forward",status="503"} = %v, want 1`, got)
	}
}

// requests is vidfarm_agentapi_requests_total in reg for the labels, 0
// when it has no such series.
func requests(t *testing.T, reg *prometheus.Registry, method, route, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"method": method, "route": route, "status": status}
	for _, mf := range mfs {
		if mf.GetName() != "vidfarm_agentapi_requests_total" {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
