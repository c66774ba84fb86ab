package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/deploy/observability"
)

// TestObservabilityMetricsExported: every metric that deploy/observability's
// alerting rules and Grafana dashboard name is exported by a real control
// plane (with the app-database bridge) or a real agent, in one of the
// scrapes taken as the farm does what makes each series appear: a queued
// video, an API request, a render, a webhook delivery, a snapshot. A rule or panel that names a metric nobody exports
// (a typo, a metric renamed or removed) fails here.
func TestObservabilityMetricsExported(t *testing.T) {
	requireE2E(t)
	dsn := appDBForTest(t)
	f := &e2eFarm{t: t, dir: t.TempDir(), hits: map[string]int{}}
	f.startImages()
	f.srv, _ = f.startServer("--app-db", dsn)
	ctx := context.Background()
	a, err := f.srv.admin.CreateAccount(ctx, "observability", "pro", 100)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	f.accountID, f.apiKey = a.AccountID, a.APIKey

	var delivered atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	f.srv.must(http.StatusCreated, http.MethodPost, "/v1/webhooks", f.apiKey, `{"url":"`+rc.URL+`/hooks"}`)

	// A video queued before any node exists: the queue's series show only
	// while something waits.
	id := f.createVideo(manualBody("a lighthouse at dusk", ""))["id"].(string)
	exported := scrapeNames(t, f.srv.admin.Server+"/metrics", e2eAdminToken)
	if !exported["vidfarm_queue_age_seconds_count"] {
		t.Error("no vidfarm_queue_age_seconds while a video waits")
	}

	// A runners file gives the agent its per-runner series; the runner serves
	// a model this test never asks for, so the procedural runner renders.
	runner := writeScript(t, f.dir, "never-called.sh", "#!/bin/sh\nexit 1\n")
	runners := filepath.Join(f.dir, "runners.yaml")
	if err := os.WriteFile(runners, []byte("version: 1\nrunners:\n  - name: unused\n    kind: command\n    command: ["+runner+"]\n    models: [hunyuan-video]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ag := f.startAgent("agent-metrics", "--metrics-listen", "127.0.0.1:0", "--runners", runners)
	served := findLogs(ag.proc, "serving metrics")
	if len(served) == 0 {
		t.Fatal("the agent did not log its metrics address")
	}
	agentURL, _ := served[0]["url"].(string)
	f.waitStatus(id, "completed", 3*time.Minute)
	eventually(t, 30*time.Second, "the video.completed webhook to arrive", func() bool { return delivered.Load() > 0 })
	if _, err := f.srv.admin.Snapshot(ctx); err != nil {
		t.Fatalf("snapshot: %v", err)
	}

	queries, err := observability.Queries()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string][]string{} // metric -> where
	for _, q := range queries {
		for _, n := range observability.MetricNames(q.Expr) {
			used[n] = append(used[n], q.Where)
		}
	}
	if len(used) < 30 {
		t.Fatalf("the rules and the dashboard name %d metrics; the reader lost some", len(used))
	}

	var missing []string
	// Counters of the delivery and the agent's last report move just after
	// what the test waited for: poll until every name shows, or report.
	deadline := time.Now().Add(30 * time.Second)
	for {
		maps.Copy(exported, scrapeNames(t, f.srv.admin.Server+"/metrics", e2eAdminToken))
		maps.Copy(exported, scrapeNames(t, agentURL, ""))
		missing = missing[:0]
		for n := range used {
			// NVML's series need an NVIDIA GPU: an agent of virtual GPUs has
			// none, and agent's TestObservabilityGPUMetrics checks them.
			if exported[n] || (exported["vidfarm_agent_virtual_gpus"] && strings.HasPrefix(n, "vidfarm_agent_gpu_")) {
				continue
			}
			missing = append(missing, n)
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(e2ePoll) // polling interval, not a wait for an event
	}
	slices.Sort(missing)
	for _, n := range missing {
		t.Errorf("%s is named by %s but neither the control plane nor the agent exports it", n, strings.Join(used[n], "; "))
	}
}

// scrapeNames returns the metric names of the samples on a /metrics page
// (histograms as their _bucket, _sum and _count series).
func scrapeNames(t *testing.T, url, token string) map[string]bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %v", url, resp.StatusCode, err)
	}
	names := map[string]bool{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
