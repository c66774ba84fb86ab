package agentapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// clock is a settable clock for the telemetry store.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func f64(v float64) *float64 { return &v }

// telemetryBeat is the heartbeat interval telemetryEnv's store is sized for.
const telemetryBeat = 5 * time.Second

// telemetryEnv is an agent listener keeping heartbeats' telemetry in a
// store on a settable clock, and an admin client listing the nodes of the
// same state with that store, whose times follow from telemetryBeat.
func telemetryEnv(t *testing.T) (*env, *clock, *telemetry.Store, *admin.Client) {
	clk := &clock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	tcfg := telemetry.ForHeartbeats(telemetryBeat)
	tcfg.Now = clk.Now
	tel := telemetry.New(tcfg)
	e := newEnv(t, func(c *agentapi.Config) { c.Telemetry = tel })
	adm := httptest.NewServer(admin.Handler(admin.Config{Token: "adm", FSM: e.fsm, Node: e.node, Telemetry: tel,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(adm.Close)
	return e, clk, tel, &admin.Client{Server: adm.URL, Token: "adm", HTTP: adm.Client()}
}

// TestHeartbeatTelemetry sends GPU samples with heartbeats and reads them
// back through the admin API's node listing over the same state, stale
// and then forgotten as the clock moves, and refuses bad samples with the
// error envelope, keeping nothing of them.
func TestHeartbeatTelemetry(t *testing.T) {
	e, clk, tel, client := telemetryEnv(t)
	tcfg := telemetry.ForHeartbeats(telemetryBeat)
	node := func() admin.NodeJSON {
		t.Helper()
		nodes, err := client.Nodes(context.Background())
		if err != nil || len(nodes) != 1 || len(nodes[0].GPUs) != 1 {
			t.Fatalf("admin nodes: %+v, %v", nodes, err)
		}
		return nodes[0]
	}

	reg := e.register("gpu-1") // GPU-0, 80 GB
	if n := node(); n.TelemetryAt != nil || n.GPUs[0].MemoryUsedGB != nil {
		t.Fatalf("telemetry before any sample: %+v", n)
	}

	good := wire.GPUSample{ID: "GPU-0", MemoryUsedGB: 30.5, UtilizationPercent: f64(42), TemperatureC: f64(67), PowerW: f64(310)}
	bad := []struct {
		name   string
		sample func(s *wire.GPUSample)
		field  string
	}{
		{"negative memory", func(s *wire.GPUSample) { s.MemoryUsedGB = -1 }, "gpus[0]"},
		{"memory over the total", func(s *wire.GPUSample) { s.MemoryUsedGB = 80.5 }, "gpus[0]"},
		{"utilisation over 100", func(s *wire.GPUSample) { s.UtilizationPercent = f64(101) }, "gpus[0]"},
		{"negative utilisation", func(s *wire.GPUSample) { s.UtilizationPercent = f64(-3) }, "gpus[0]"},
		{"temperature of no GPU", func(s *wire.GPUSample) { s.TemperatureC = f64(900) }, "gpus[0]"},
		{"negative power", func(s *wire.GPUSample) { s.PowerW = f64(-1) }, "gpus[0]"},
		{"unknown GPU id", func(s *wire.GPUSample) { s.ID = "GPU-9" }, "gpus[0].id"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.sample(&s)
			r := e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{GPUs: []wire.GPUSample{s}})
			want(t, r, http.StatusBadRequest, apierr.CodeInvalidRequest)
			var env struct {
				Error struct {
					Details map[string]any `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Details["field"] != tc.field {
				t.Fatalf("details of %s: %v (%v), want field %q", r, env.Error.Details, err, tc.field)
			}
		})
	}
	twice := e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{GPUs: []wire.GPUSample{good, good}})
	want(t, twice, http.StatusBadRequest, apierr.CodeInvalidRequest)
	if n := node(); n.TelemetryAt != nil {
		t.Fatalf("a refused heartbeat left telemetry: %+v", n)
	}

	want(t, e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{GPUs: []wire.GPUSample{good}}), http.StatusOK, "")
	n := node()
	g := n.GPUs[0]
	if n.TelemetryAt == nil || !n.TelemetryAt.Equal(clk.Now()) || n.TelemetryStale {
		t.Fatalf("telemetry_at %v stale %v, want %v fresh", n.TelemetryAt, n.TelemetryStale, clk.Now())
	}
	if g.MemoryUsedGB == nil || *g.MemoryUsedGB != 30.5 || g.UtilizationPercent == nil || *g.UtilizationPercent != 42 ||
		g.TemperatureC == nil || *g.TemperatureC != 67 || g.PowerW == nil || *g.PowerW != 310 || g.MemoryTotalGB != 80 {
		t.Fatalf("GPU as listed: %+v", g)
	}

	// A heartbeat without samples keeps the last one; it ages into stale,
	// then is forgotten.
	clk.add(tcfg.StaleAfter + time.Second)
	want(t, e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{}), http.StatusOK, "")
	if n := node(); n.TelemetryAt == nil || !n.TelemetryStale || n.GPUs[0].TemperatureC == nil {
		t.Fatalf("after %s without a sample: %+v", tcfg.StaleAfter, n)
	}
	clk.add(tcfg.ForgetAfter)
	if n := node(); n.TelemetryAt != nil || n.GPUs[0].MemoryUsedGB != nil {
		t.Fatalf("after %s without a sample: %+v", tcfg.ForgetAfter, n)
	}

	// A node that deregisters is forgotten at once.
	want(t, e.call("POST", "/agent/v1/heartbeat", reg.Credential, wire.HeartbeatRequest{GPUs: []wire.GPUSample{good}}), http.StatusOK, "")
	if _, ok := tel.Get(reg.NodeID); !ok {
		t.Fatal("sample not kept")
	}
	want(t, e.call("POST", "/agent/v1/deregister", reg.Credential, nil), http.StatusNoContent, "")
	if s, ok := tel.Get(reg.NodeID); ok {
		t.Fatalf("deregistered node's sample kept: %+v", s)
	}
}

// TestHeartbeatPaused: an agent that leases nothing of its own accord (its
// work dir over its limit) says why with its heartbeats; the admin node
// listing shows it until a heartbeat without it, or until the node is
// silent past the telemetry's forget time. An overlong reason is refused.
func TestHeartbeatPaused(t *testing.T) {
	e, clk, _, client := telemetryEnv(t)
	paused := func() string {
		t.Helper()
		nodes, err := client.Nodes(context.Background())
		if err != nil || len(nodes) != 1 {
			t.Fatalf("admin nodes: %+v, %v", nodes, err)
		}
		return nodes[0].Paused
	}
	cred := e.register("gpu-1").Credential
	const why = "work dir /var/lib/vidfarm/work holds 2000 bytes, over --work-dir-max-bytes 1000: leasing no new work until it shrinks"
	want(t, e.call("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Paused: why}), http.StatusOK, "")
	if got := paused(); got != why {
		t.Fatalf("paused %q after the heartbeat, want %q", got, why)
	}
	clk.add(2 * time.Minute) // silent past the forget time
	if got := paused(); got != "" {
		t.Fatalf("paused %q from a node silent for 2 min", got)
	}
	want(t, e.call("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Paused: why}), http.StatusOK, "")
	want(t, e.call("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{}), http.StatusOK, "")
	if got := paused(); got != "" {
		t.Fatalf("paused %q after a heartbeat without it", got)
	}
	long := make([]byte, wire.MaxPausedLen+1)
	for i := range long {
		long[i] = 'x'
	}
	want(t, e.call("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Paused: string(long)}), http.StatusBadRequest, apierr.CodeInvalidRequest)
	if got := paused(); got != "" {
		t.Fatalf("paused %q kept from a refused heartbeat", got)
	}
}
