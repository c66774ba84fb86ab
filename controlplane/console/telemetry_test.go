package console_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func f64(v float64) *float64 { return &v }

// gpuSample is the reading the console tests send for GPU-0.
var gpuSample = wire.GPUSample{ID: "GPU-0", MemoryUsedGB: 30.5, UtilizationPercent: f64(42), TemperatureC: f64(67), PowerW: f64(310)}

// telemetry sends a heartbeat carrying GPU readings.
func (f *farm) telemetry(cred string, samples ...wire.GPUSample) {
	f.t.Helper()
	f.agent("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{GPUs: samples}, nil)
}

// login opens a console session and returns its cookie.
func login(t *testing.T, base string) *http.Cookie {
	t.Helper()
	st, body, cks := send(t, "POST", base+"/console/login", `{"token": "`+adminToken+`"}`, nil, nil)
	if st != http.StatusOK || len(cks) != 1 {
		t.Fatalf("login: %d %s", st, body)
	}
	return cks[0]
}

// TestFarmShowsGPUTelemetry: the GPU readings a node's heartbeat carries
// reach the leader's farm page, GPU by GPU, with when they arrived; a GPU
// without readings has none.
func TestFarmShowsGPUTelemetry(t *testing.T) {
	f := startFarm(t)
	cred := f.register("gpu-t", models.IDs())
	f.telemetry(cred, gpuSample)

	base := "http://" + f.srv.AdminAddr()
	st, body, _ := send(t, "GET", base+"/console/api/farm", "", login(t, base), nil)
	if st != http.StatusOK {
		t.Fatalf("farm: %d %s", st, body)
	}
	var farm console.FarmJSON
	must(t, json.Unmarshal([]byte(body), &farm), "farm answer")
	if farm.TelemetryOnLeader || len(farm.Nodes) != 1 || len(farm.Nodes[0].GPUs) != 2 {
		t.Fatalf("farm on the leader: telemetry_on_leader %v, nodes %+v", farm.TelemetryOnLeader, farm.Nodes)
	}
	n := farm.Nodes[0]
	if n.TelemetryAt == nil || n.TelemetryStale || n.TelemetryAt.After(farm.GeneratedAt) {
		t.Errorf("telemetry_at %v stale %v (page at %v)", n.TelemetryAt, n.TelemetryStale, farm.GeneratedAt)
	}
	g0, g1 := n.GPUs[0], n.GPUs[1]
	if g0.ID != "GPU-0" || g0.MemoryUsedGB == nil || *g0.MemoryUsedGB != 30.5 || g0.MemoryTotalGB != 80 ||
		g0.UtilizationPercent == nil || *g0.UtilizationPercent != 42 || g0.TemperatureC == nil || *g0.TemperatureC != 67 ||
		g0.PowerW == nil || *g0.PowerW != 310 {
		t.Errorf("GPU-0 on the farm page: %+v", g0)
	}
	if g1.MemoryUsedGB != nil || g1.TemperatureC != nil {
		t.Errorf("GPU-1, never sampled, shows readings: %+v", g1)
	}
}

// TestFarmShowsPaused: a node whose agent leases nothing of its own accord
// says why with its heartbeats, and the farm page's data carries it until
// a heartbeat without it.
func TestFarmShowsPaused(t *testing.T) {
	f := startFarm(t)
	cred := f.register("gpu-p", models.IDs())
	const why = "work dir /work holds 2000 bytes, over --work-dir-max-bytes 1000: leasing no new work until it shrinks"
	base := "http://" + f.srv.AdminAddr()
	cookie := login(t, base)
	paused := func() string {
		t.Helper()
		st, body, _ := send(t, "GET", base+"/console/api/farm", "", cookie, nil)
		if st != http.StatusOK {
			t.Fatalf("farm: %d %s", st, body)
		}
		var farm console.FarmJSON
		must(t, json.Unmarshal([]byte(body), &farm), "farm answer")
		if len(farm.Nodes) != 1 {
			t.Fatalf("farm nodes: %+v", farm.Nodes)
		}
		return farm.Nodes[0].Paused
	}
	f.agent("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{Paused: why}, nil)
	if got := paused(); got != why {
		t.Fatalf("paused %q on the farm page, want %q", got, why)
	}
	f.agent("POST", "/agent/v1/heartbeat", cred, wire.HeartbeatRequest{}, nil)
	if got := paused(); got != "" {
		t.Fatalf("paused %q after a heartbeat without it", got)
	}
}
