package console_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// localNode applies commands to the FSM directly: the admin API over a
// state with no Raft around it, so the benchmark measures the handlers.
type localNode struct{ f *fsm.FSM }

func (n localNode) Apply(_ context.Context, c fsm.Command) (any, error) { return n.f.ApplyCommand(c) }
func (n localNode) Snapshot() error                                     { return nil }
func (n localNode) Stats() map[string]string {
	return map[string]string{"state": "Leader", "applied_index": strconv.FormatUint(n.f.AppliedIndex(), 10)}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkConsole answers each console endpoint over a state of
// VIDFARM_BENCH_NODES render nodes (default 1,000; 8 GPUs each, two
// renders running on each, and GPU readings from each) and VIDFARM_BENCH_QUEUED queued videos
// (default 100,000, over 10 accounts and the catalog's models), through
// the real admin handlers in-process; the target is 100 ms an answer.
// Asking the other members for their status (network calls, a second at
// most) is not part of it: this state has no cluster.
// benchState is an empty state in a file and a way to apply commands to it.
func benchState(b *testing.B) (*fsm.FSM, func(fsm.Command)) {
	f, err := fsm.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f, func(c fsm.Command) {
		if _, err := f.ApplyCommand(c); err != nil {
			b.Fatalf("%T: %v", c, err)
		}
	}
}

// benchLogin logs in to con and returns the session cookie.
func benchLogin(b *testing.B, con *console.Console) *http.Cookie {
	rec := httptest.NewRecorder()
	con.ServeHTTP(rec, httptest.NewRequest("POST", "/console/login", strings.NewReader(`{"token": "bench"}`)))
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusOK || len(cookies) != 1 {
		b.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	return cookies[0]
}

func BenchmarkConsole(b *testing.B) {
	nNodes, nQueued := envInt("VIDFARM_BENCH_NODES", 1000), envInt("VIDFARM_BENCH_QUEUED", 100_000)
	f, apply := benchState(b)
	start, now := time.Now(), time.Now().UnixNano()
	for a := range 10 {
		id := fmt.Sprintf("acct_%d", a)
		apply(&fsm.CreateAccount{AccountID: id, Name: id, Plan: fsm.PlanMax, Credits: fsm.MaxCredits, KeyID: id + "_key",
			KeyHash: sha256.Sum256([]byte(id)), KeyHint: "k", Now: now})
	}
	ids := models.IDs()
	for i := range nNodes {
		gpus := make([]scheduler.GPU, 8)
		for g := range gpus {
			gpus[g] = scheduler.GPU{ID: fmt.Sprintf("GPU-%d", g), MemoryTotalGB: 80, MemoryFreeGB: 79}
		}
		id := fmt.Sprintf("node_%05d", i)
		apply(&fsm.RegisterNode{NodeID: id, Name: fmt.Sprintf("gpu-%05d", i), CredHash: sha256.Sum256([]byte(id)), Virtual: false, Now: now,
			Node: scheduler.Node{ID: id, GPUs: gpus, CPUSlots: 16, Tools: []string{"ffmpeg", "espeak-ng"}, Models: ids, WarmModels: ids[i%len(ids) : i%len(ids)+1]}})
	}
	for i := range nQueued {
		spec := fsm.Spec{Mode: fsm.ModeManual, Prompt: "p", Model: "wan-2.2-a14b", Operation: "text_to_video", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5}
		apply(&fsm.CreateVideo{VideoID: fmt.Sprintf("vid_%08d", i), AccountID: fmt.Sprintf("acct_%d", i%10), Spec: spec, Price: 1, Now: now + int64(i)})
	}
	for i := range nNodes {
		for range 2 {
			apply(&fsm.LeaseTask{NodeID: fmt.Sprintf("node_%05d", i), LeaseMS: 60_000, Now: now})
		}
	}
	// Every node's GPUs have readings, as on a leader whose agents send them.
	tel := telemetry.New(telemetry.ForHeartbeats(time.Hour))
	for i := range nNodes {
		gpus := map[string]telemetry.GPU{}
		for g := range 8 {
			gpus[fmt.Sprintf("GPU-%d", g)] = telemetry.GPU{MemoryUsedGB: 41.5, UtilizationPercent: f64(97), TemperatureC: f64(71), PowerW: f64(612)}
		}
		tel.Put(fmt.Sprintf("node_%05d", i), gpus)
	}
	b.Logf("%d nodes, %d queued videos, %d tasks ready, filled in %s", nNodes, nQueued, f.Stats().Queued, time.Since(start).Round(time.Millisecond))

	adminAPI := admin.Handler(admin.Config{Token: "bench", FSM: f, Node: localNode{f}, Gatherer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Telemetry: tel})
	con := console.New(console.Config{Token: "bench", Admin: adminAPI, FSM: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Telemetry: tel})
	cookie := benchLogin(b, con)
	// The admin API's own answers the pages are made of, for comparison.
	for _, path := range []string{"/admin/v1/nodes", "/admin/v1/queue?limit=200", "/admin/v1/videos/vid_00000000"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("GET", path, nil)
				req.Header.Set("Authorization", "Bearer bench")
				rec := httptest.NewRecorder()
				adminAPI.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
			}
		})
	}
	b.Run("EachReadyTask", func(b *testing.B) {
		for b.Loop() {
			n := 0
			f.EachReadyTask(func(scheduler.Kind, string, time.Time) { n++ })
		}
	})
	for _, path := range []string{"/console/", "/console/api/farm", "/console/api/queue", "/console/api/videos/vid_00000000",
		fmt.Sprintf("/console/api/videos/vid_%08d", nQueued-1), "/console/api/webhooks"} {
		b.Run(cmp.Or(strings.TrimPrefix(path, "/console/"), "page"), func(b *testing.B) {
			var bytes int
			for b.Loop() {
				req := httptest.NewRequest("GET", path, nil)
				req.AddCookie(cookie)
				rec := httptest.NewRecorder()
				con.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
				bytes = rec.Body.Len()
			}
			b.ReportMetric(float64(bytes), "bytes/answer")
		})
	}
}
