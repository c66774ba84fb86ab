package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
)

// adminCLI runs `vidfarm admin` against p and decodes its JSON output.
func adminCLI(t *testing.T, p *proc, args ...string) (map[string]any, int) {
	t.Helper()
	full := append([]string{"admin", "--server", p.admin.Server, "--admin-token", durabilityToken}, args...)
	out, err := exec.Command(vidfarmBinary(t), full...).Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("vidfarm %v: %v", full, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("vidfarm %v printed no JSON (%v): %s", full, err, out)
	}
	return m, code
}

// TestAdminCLI drives every admin command of the issue through the real binary
// and checks the JSON each prints, and that a refusal is the envelope with exit 1.
func TestAdminCLI(t *testing.T) {
	p := startServer(t, t.TempDir())
	acct, code := adminCLI(t, p, "account", "create", "--name", "Acme", "--plan", "free", "--credits", "5")
	id, _ := acct["account_id"].(string)
	if code != 0 || id == "" || acct["api_key"] == nil {
		t.Fatalf("account create: exit %d, %v", code, acct)
	}
	// A retried keyed creation opens one account, and only the latest
	// answer's key works: the earlier answer's secret cannot be shown again.
	var signup []map[string]any
	for range 2 {
		r, code := adminCLI(t, p, "account", "create", "--name", "Bolt", "--plan", "pro", "--credits", "7", "--idempotency-key", "signup-1")
		if code != 0 || r["account_id"] == nil || r["api_key"] == nil {
			t.Fatalf("account create --idempotency-key: exit %d, %v", code, r)
		}
		signup = append(signup, r)
	}
	if signup[0]["account_id"] != signup[1]["account_id"] || signup[0]["api_key"] == signup[1]["api_key"] {
		t.Fatalf("a retried keyed creation: %v then %v, want one account with a new key", signup[0], signup[1])
	}
	for i, want := range []int{401, 200} {
		if r := p.call("GET", "/v1/me", signup[i]["api_key"].(string), ""); r.status != want {
			t.Fatalf("the key of keyed creation #%d answers %d, want %d", i+1, r.status, want)
		}
	}
	if r, code := adminCLI(t, p, "account", "create", "--name", "Bolt", "--plan", "max", "--idempotency-key", "signup-1"); code != 1 || r["error"].(map[string]any)["code"] != "duplicate_request" {
		t.Fatalf("creation key reused for another request: exit %d, %v", code, r)
	}
	key, code := adminCLI(t, p, "key", "create", "--account", id)
	keyID, _ := key["key_id"].(string)
	if code != 0 || keyID == "" || key["api_key"] == nil {
		t.Fatalf("key create: exit %d, %v", code, key)
	}
	if r, code := adminCLI(t, p, "credits", "grant", "--account", id, "--amount", "100"); code != 0 || r["credits"] != float64(105) {
		t.Fatalf("credits grant: exit %d, %v", code, r)
	}
	for range 2 { // a retried keyed grant grants once
		if r, code := adminCLI(t, p, "credits", "grant", "--account", id, "--amount", "10", "--idempotency-key", "purchase-1"); code != 0 || r["credits"] != float64(115) {
			t.Fatalf("credits grant --idempotency-key: exit %d, %v", code, r)
		}
	}
	if r, code := adminCLI(t, p, "credits", "debit", "--account", id, "--amount", "10", "--idempotency-key", "purchase-1"); code != 0 || r["balance"] != float64(105) {
		t.Fatalf("credits debit with the grant's key: exit %d, %v", code, r)
	}
	for i, want := range []struct {
		code     int
		balance  float64
		replayed bool
	}{{0, 95, false}, {0, 95, true}} {
		r, code := adminCLI(t, p, "credits", "debit", "--account", id, "--amount", "10", "--idempotency-key", "app-render-1")
		if code != want.code || r["balance"] != want.balance || r["replayed"] != want.replayed {
			t.Fatalf("credits debit #%d: exit %d, %v; want balance %v replayed %v", i+1, code, r, want.balance, want.replayed)
		}
	}
	if r, code := adminCLI(t, p, "credits", "debit", "--account", id, "--amount", "11", "--idempotency-key", "app-render-1"); code != 1 || r["error"].(map[string]any)["code"] != "duplicate_request" {
		t.Fatalf("debit key reused for another amount: exit %d, %v", code, r)
	}
	// cluster status asks every member (here the one node) for its own view.
	if r, code := adminCLI(t, p, "cluster", "status"); code != 0 || r["leader"] == "" || len(r["nodes"].([]any)) != 1 {
		t.Fatalf("cluster status: exit %d, %v", code, r)
	} else if st := r["nodes"].([]any)[0].(map[string]any)["status"].(map[string]any); st["state"] != "leader" || st["leader_id"] != r["leader"] || st["app_db"].(map[string]any)["enabled"] != false {
		t.Fatalf("cluster status of the node: %v", st)
	}
	if r, code := adminCLI(t, p, "plan", "set", "--account", id, "--plan", "max"); code != 0 || r["plan"] != "max" || r["premium"] != true {
		t.Fatalf("plan set: exit %d, %v", code, r)
	}
	if r, code := adminCLI(t, p, "key", "revoke", "--key", keyID); code != 0 || r["revoked"] != true {
		t.Fatalf("key revoke: exit %d, %v", code, r)
	}
	if r := p.call("GET", "/v1/me", key["api_key"].(string), ""); r.status != 401 {
		t.Fatalf("revoked key still works: %d", r.status)
	}
	if r, code := adminCLI(t, p, "webhook", "deliveries", "--account", id, "--limit", "10"); code != 0 || r["data"] == nil {
		t.Fatalf("webhook deliveries: exit %d, %v", code, r)
	}
	if r, code := adminCLI(t, p, "webhook", "deliveries", "--state", "lost"); code != 1 || r["error"] == nil {
		t.Fatalf("webhook deliveries with an unknown state: exit %d, %v", code, r)
	}
	r, code := adminCLI(t, p, "account", "get", "--account", "acct_nope")
	e, _ := r["error"].(map[string]any)
	if code != 1 || e == nil || e["code"] != "account_not_found" {
		t.Fatalf("unknown account: exit %d, %v", code, r)
	}
}

// TestAdminCLICreditCeiling: an opening balance or a grant past fsm.MaxCredits
// (10^15) is refused through the real binary with exit 1 and the envelope,
// and the balance is what it was.
func TestAdminCLICreditCeiling(t *testing.T) {
	p := startServer(t, t.TempDir())
	if r, code := adminCLI(t, p, "account", "create", "--name", "Huge", "--plan", "pro", "--credits", "9223372036854775807"); code != 1 || r["error"].(map[string]any)["code"] != "invalid_request" {
		t.Fatalf("account create past the ceiling: exit %d, %v", code, r)
	}
	acct, code := adminCLI(t, p, "account", "create", "--name", "Near", "--plan", "pro", "--credits", "999999999999999")
	id, _ := acct["account_id"].(string)
	if code != 0 || id == "" {
		t.Fatalf("account create just under the ceiling: exit %d, %v", code, acct)
	}
	r, code := adminCLI(t, p, "credits", "grant", "--account", id, "--amount", "2")
	if code != 1 {
		t.Fatalf("grant past the ceiling: exit %d, %v", code, r)
	}
	e, _ := r["error"].(map[string]any)
	if e["code"] != "invalid_request" || e["details"].(map[string]any)["max_credits"] != float64(1e15) {
		t.Fatalf("grant past the ceiling: %v", r)
	}
	if got, code := adminCLI(t, p, "account", "get", "--account", id); code != 0 || got["credits"] != float64(999999999999999) {
		t.Fatalf("after the refused grant: exit %d, %v", code, got)
	}
	if r, code := adminCLI(t, p, "credits", "grant", "--account", id, "--amount", "1"); code != 0 || r["credits"] != float64(1e15) {
		t.Fatalf("grant up to the ceiling: exit %d, %v", code, r)
	}
}
