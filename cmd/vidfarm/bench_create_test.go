package main

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestBenchCreateIdempotencyKeys runs vidfarm bench create against a real
// server, first without and then with --idempotency-keys: the server keeps
// no idempotency record for the first runs (one with the longest prompt,
// --prompt-chars, which the server must take) and one per video for the
// last.
func TestBenchCreateIdempotencyKeys(t *testing.T) {
	p := startServer(t, t.TempDir())
	run := func(extra ...string) float64 {
		t.Helper()
		args := append([]string{"bench", "create", "--server", p.public, "--admin-server", p.admin.Server,
			"--admin-token", durabilityToken, "--accounts", "2", "--concurrency", "4", "--duration", "1s", "--json"}, extra...)
		out, err := exec.Command(vidfarmBinary(t), args...).Output()
		if err != nil {
			t.Fatalf("vidfarm %v: %v", args, err)
		}
		var rep struct {
			Created  float64          `json:"created"`
			Failures map[string]int64 `json:"failures"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("vidfarm %v printed no report (%v): %s", args, err, out)
		}
		if rep.Created == 0 || len(rep.Failures) > 0 {
			t.Fatalf("vidfarm %v: %s", args, out)
		}
		return rep.Created
	}
	const series = `vidfarm_state_records{kind="idempotency"}`
	run()
	run("--prompt-chars", "5000") // the longest prompt the API takes
	if n := stateMetric(t, p, series); n != 0 {
		t.Fatalf("%v idempotency records after a run without keys, want 0", n)
	}
	created := run("--idempotency-keys")
	// The creates in flight when the run ends (at most one per client) are
	// made by the server but not counted by the client.
	if n := stateMetric(t, p, series); n < created || n > created+4 {
		t.Fatalf("%v idempotency records after a run of 4 clients that created %v videos with keys", n, created)
	}
}
