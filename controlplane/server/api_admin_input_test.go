package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// adminRaw sends body as is to the admin listener with the admin token.
func (h *harness) adminRaw(method, path, body string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.admin.Server+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.cfg.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	return h.send(req)
}

// details is error.details of an envelope (nil when absent).
func (r response) details(t *testing.T) map[string]any {
	t.Helper()
	d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	return d
}

// TestAdminBodyErrors: the admin API reads a body as the public API does,
// answering what is wrong with it in the contract's envelope (the field and
// what it must be, not the decoder's words), and a refused body changes
// nothing.
func TestAdminBodyErrors(t *testing.T) {
	t.Parallel()
	h := start(t)
	acct, key := h.account("pro", 10)
	grant := "/admin/v1/accounts/" + acct + "/credits"
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		message    string            // in error.message
		details    map[string]string // in error.details
	}{
		{"a string for an integer", `{"amount":"5"}`, 400, "invalid_request", `field "amount" must be an integer`,
			map[string]string{"field": "amount", "expected": "an integer"}},
		{"a second object after the first", `{"amount":1}{"amount":5}`, 400, "invalid_request", "data after the JSON object", nil},
		{"cut short", `{"amount":`, 400, "invalid_request", "not valid JSON", nil},
		{"not JSON", `amount=5`, 400, "invalid_request", "not valid JSON", nil},
		{"an array", `[1]`, 400, "invalid_request", "must be a JSON object", nil},
		{"an unknown field", `{"amount":1,"bogus":2}`, 400, "invalid_request", `unknown field "bogus"`, nil},
		{"over 64 KB", `{"amount":1,"pad":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "payload_too_large", "over 65536 bytes", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.adminRaw("POST", grant, tc.body)
			if r.Status != tc.status || r.errorCode(t) != tc.code {
				t.Fatalf("status %d, want %d %s: %s", r.Status, tc.status, tc.code, r.Body)
			}
			if msg := r.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.message) {
				t.Fatalf("message %q, want it to say %q", msg, tc.message)
			}
			d := r.details(t)
			for k, v := range tc.details {
				if d[k] != v {
					t.Fatalf("details %v, want %s=%q", d, k, v)
				}
			}
		})
	}
	if got := h.balance(key); got != 10 {
		t.Fatalf("balance %d after refused grants, want 10", got)
	}
}

// TestAdminFailVideoTwice: failing a video again (a retried command) answers
// as the first did instead of refusing, a body may be left out (the reason
// is optional), and a reason the customer could not read in an error
// message is refused before anything changes.
func TestAdminFailVideoTwice(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 10)
	id := h.create(key, autoReq("duration_seconds", 5))["id"].(string)
	long := h.adminPost("/admin/v1/videos/"+id+"/fail", map[string]any{"reason": strings.Repeat("r", 501)})
	if long.Status != 400 || long.errorCode(t) != "invalid_request" || long.details(t)["field"] != "reason" {
		t.Fatalf("a 501-byte reason: %d %s", long.Status, long.Body)
	}
	if st := expectAPIStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), 200)["status"]; st != "queued" {
		t.Fatalf("status %v after the refused fail, want queued", st)
	}
	var first map[string]any
	for i := range 2 {
		r := h.adminRaw("POST", "/admin/v1/videos/"+id+"/fail", "")
		if r.Status != 200 {
			t.Fatalf("fail #%d: %d %s", i+1, r.Status, r.Body)
		}
		got := r.json(t)
		if got["status"] != "failed" || got["credits_refunded"] != true {
			t.Fatalf("fail #%d: %v", i+1, got)
		}
		if i == 0 {
			first = got
		} else if got["refunded_credits"] != first["refunded_credits"] {
			t.Fatalf("the second fail answered %v, the first %v", got, first)
		}
	}
	if got := h.balance(key); got != 10 {
		t.Fatalf("balance %d, want 10: refunded once", got)
	}
}

// TestAdminClusterRemoveRefusals: removing a node that is not a member is
// a 404 that lists the members (a typo is not a success), and removing the
// only voter is refused for good (409, not retryable) rather than a 503 to
// retry that can never work.
func TestAdminClusterRemoveRefusals(t *testing.T) {
	t.Parallel()
	h := start(t)
	r := h.adminPost("/admin/v1/cluster/remove", map[string]any{"id": "nope"})
	if r.Status != 404 || r.errorCode(t) != "not_found" {
		t.Fatalf("unknown node: %d %s", r.Status, r.Body)
	}
	if m, _ := r.details(t)["members"].([]any); len(m) != 1 || m[0] != h.cfg.NodeID {
		t.Fatalf("details %v, want the one member %s", r.details(t), h.cfg.NodeID)
	}
	r = h.adminPost("/admin/v1/cluster/remove", map[string]any{"id": h.cfg.NodeID})
	if r.Status != 409 || r.errorCode(t) != "invalid_request" || r.json(t)["error"].(map[string]any)["retryable"] != false {
		t.Fatalf("only voter: %d %s", r.Status, r.Body)
	}
	if m := h.adminGet("/admin/v1/cluster/members"); !strings.Contains(m, `"`+h.cfg.NodeID+`"`) {
		t.Fatalf("members after the refusals: %s", m)
	}
}
