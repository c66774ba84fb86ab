package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/bench"
)

// TestBenchLoadAgainstFarm runs `vidfarm bench load` against a real server
// and agent on loopback, with two keys in turn: one account that can pay
// for every video and one that can pay for none. Every accepted video must
// be followed to completed, every refusal counted by its error code, and
// (with the webhook receiver) its signed video.completed received once,
// the run's endpoints deleted at the end.
func TestBenchLoadAgainstFarm(t *testing.T) {
	f := newE2EFarm(t, 1_000)
	f.startAgent("a1")
	poor, err := f.srv.admin.CreateAccount(context.Background(), "poor", "pro", 2) // a 5 s auto video costs 3
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(vidfarmBinary(t), "bench", "load", "--server", f.srv.public,
		"--api-key", f.apiKey+","+poor.APIKey, "--rate", "3", "--duration", "1s",
		"--poll", "100ms", "--drain", "5m", "--json", "--webhook-listen", "127.0.0.1:0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench load: %v\n%s", err, stderr.String())
	}
	var rep bench.LoadReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	t.Logf("\n%s\nstderr:\n%s", rep, stderr.String())
	// 3 sends, in turn: rich, poor, rich.
	if rep.Sent != 3 || rep.Accepted != 2 || rep.Rejected["insufficient_credits"] != 1 || len(rep.Rejected) != 1 {
		t.Fatalf("sent %d, accepted %d, rejected %v; want 3, 2, 1 x insufficient_credits", rep.Sent, rep.Accepted, rep.Rejected)
	}
	if rep.Outcomes["completed"] != 2 || len(rep.Outcomes) != 1 {
		t.Fatalf("outcomes %v, want 2 completed", rep.Outcomes)
	}
	if rep.CreateLatency.Count != 3 || rep.TimeToCompleted.Count != 2 || rep.PollLatency.Count == 0 {
		t.Fatalf("counts: create %d, time to completed %d, polls %d", rep.CreateLatency.Count, rep.TimeToCompleted.Count, rep.PollLatency.Count)
	}
	for name, s := range map[string]bench.LatencyStats{"create": rep.CreateLatency, "ttc": rep.TimeToCompleted, "poll": rep.PollLatency} {
		if s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max*1.001 {
			t.Errorf("%s percentiles out of order: %+v", name, s)
		}
	}
	// A video cannot complete before its create was answered.
	if rep.TimeToCompleted.Max*1000 < rep.CreateLatency.P50 {
		t.Errorf("time to completed %v s below the create latency %v ms", rep.TimeToCompleted.Max, rep.CreateLatency.P50)
	}
	if !bytes.Contains(stderr.Bytes(), []byte("sending: 100%")) {
		t.Errorf("no progress lines on stderr:\n%s", stderr.String())
	}
	w := rep.Webhooks
	if w == nil || w.Events["video.completed"] != 2 || len(w.Events) != 1 || w.Deliveries != 2 ||
		w.Duplicates != 0 || w.BadSignatures != 0 || w.Foreign != 0 || len(w.NotDelivered) != 0 {
		t.Fatalf("webhooks %+v: want the 2 completions delivered once each, all signed right", w)
	}
	// Delivered after the render completed, so no sooner than the create
	// was answered (the poll may see completed before or after delivery).
	if w.TimeToWebhook.Count != 2 || w.TimeToWebhook.Max*1000 < rep.CreateLatency.P50 {
		t.Errorf("time to webhook %+v", w.TimeToWebhook)
	}
	for _, key := range []string{f.apiKey, poor.APIKey} {
		requireNoWebhooks(t, f, key)
	}
}

// requireNoWebhooks fails unless key's account has no webhook endpoint.
func requireNoWebhooks(t *testing.T, f *e2eFarm, key string) {
	t.Helper()
	if l := f.srv.must(http.StatusOK, http.MethodGet, "/v1/webhooks", key, "").obj(t); l["count"] != 0.0 {
		t.Fatalf("endpoints left after the run: %v", l)
	}
}

// An interrupted run (Ctrl-C) still deletes the endpoint it registered.
func TestBenchLoadInterruptDeletesWebhook(t *testing.T) {
	f := newE2EFarm(t, 1_000)
	cmd := exec.Command(vidfarmBinary(t), "bench", "load", "--server", f.srv.public, "--api-key", f.apiKey,
		"--rate", "1", "--duration", "10m", "--webhook-listen", "127.0.0.1:0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the run to register its endpoint", func() bool {
		return f.srv.must(http.StatusOK, http.MethodGet, "/v1/webhooks", f.apiKey, "").obj(t)["count"] == 1.0
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bench load after Ctrl-C: %v\n%s", err, stderr.String())
	}
	requireNoWebhooks(t, f, f.apiKey)
	if !bytes.Contains(stderr.Bytes(), []byte("interrupted")) || !bytes.Contains(stdout.Bytes(), []byte("webhooks at http://127.0.0.1:")) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// A run in which the farm accepted nothing (here: nothing listens) measured
// nothing, and exits non-zero so that a script does not read it as a result.
func TestBenchLoadNothingAcceptedFails(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(vidfarmBinary(t), "bench", "load", "--server", "http://127.0.0.1:1", "--api-key", "vf_live_x",
		"--rate", "4", "--duration", "500ms", "--drain", "1s").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !bytes.Contains(out, []byte("none of the 2 creates was accepted")) {
		t.Fatalf("exit %v:\n%s", err, out)
	}
	out, err = exec.Command(vidfarmBinary(t), "bench", "load", "--api-key", "k", "--body", "{bad").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("the create body is not valid JSON")) || bytes.Contains(out, []byte("creates at")) {
		t.Fatalf("a body that is not JSON: %v\n%s", err, out)
	}
}
