package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// adminPost sends a JSON body to the admin listener with the admin token.
func (h *harness) adminPost(path string, body any) response {
	h.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", h.admin.Server+path, bytes.NewReader(raw))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.cfg.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	return h.send(req)
}

// TestAPIAdminCreditCeiling is issue 17 through the admin API: an opening balance
// or grant that would raise a balance past fsm.MaxCredits (or wrap int64) is a
// 400 with the envelope and its reason, and leaves the balance as it was.
func TestAPIAdminCreditCeiling(t *testing.T) {
	t.Parallel()
	h := start(t)
	const c = fsm.MaxCredits
	acct, key := h.account("pro", 10)
	// A video holds 3 credits until it ends: a failure would give them back.
	h.create(key, autoReq("duration_seconds", 5)) // 3 credits
	if got := h.balance(key); got != 7 {
		t.Fatalf("balance %d after a 3-credit video, want 7", got)
	}
	for _, tc := range []struct {
		name, path string
		body       any
		field      string
		reason     string
		// from the FSM: the account's numbers in details
		fsm bool
	}{
		{name: "account opened with 2^63-1", path: "/admin/v1/accounts",
			body: map[string]any{"name": "Wrap", "plan": "pro", "credits": int64(math.MaxInt64)}, field: "credits",
			reason: fmt.Sprintf("opening balance of %d credits is above the ceiling of %d credits an account may hold", int64(math.MaxInt64), c)},
		{name: "account opened one past the ceiling", path: "/admin/v1/accounts",
			body: map[string]any{"name": "Big", "plan": "pro", "credits": c + 1}, field: "credits",
			reason: fmt.Sprintf("opening balance of %d credits is above the ceiling of %d credits an account may hold", c+1, c)},
		{name: "grant of 2^63-1", path: "/admin/v1/accounts/" + acct + "/credits",
			body: map[string]any{"amount": int64(math.MaxInt64)}, field: "amount",
			reason: fmt.Sprintf("grant of %d credits is above the ceiling of %d credits an account may hold", int64(math.MaxInt64), c)},
		{name: "grant that passes the ceiling with the balance", path: "/admin/v1/accounts/" + acct + "/credits",
			body: map[string]any{"amount": c - 9}, fsm: true,
			reason: fmt.Sprintf("grant of %d credits would raise the balance of %s to %d (counting 3 credits its unfinished videos hold, which a failure refunds), above the ceiling of %d credits", c-9, acct, c+1, c)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectAPIError(t, h.adminPost(tc.path, tc.body), http.StatusBadRequest, apierr.CodeInvalidRequest)
			d := errDetails(t, e)
			if e["message"] != tc.reason || d["reason"] != tc.reason || jsonInt(t, d["max_credits"]) != c {
				t.Fatalf("message %q, details %v; want the reason %q and max_credits", e["message"], d, tc.reason)
			}
			if !tc.fsm && d["field"] != tc.field {
				t.Fatalf("details.field %v, want %q", d["field"], tc.field)
			}
			if tc.fsm && (d["account_id"] != acct || jsonInt(t, d["balance"]) != 7 || jsonInt(t, d["held_credits"]) != 3 ||
				jsonInt(t, d["amount"]) != c-9 || jsonInt(t, d["balance_after"]) != c+1) {
				t.Fatalf("details %v", d)
			}
			if got := h.balance(key); got != 7 {
				t.Fatalf("a refused %s moved the balance to %d", tc.name, got)
			}
		})
	}
	raw, err := h.admin.Do(t.Context(), "GET", "/admin/v1/status", nil)
	var st struct {
		State struct {
			Accounts int `json:"accounts"`
		} `json:"state"`
	}
	if err != nil || json.Unmarshal(raw, &st) != nil || st.State.Accounts != 1 {
		t.Fatalf("status after refused openings: %s (%v); want one account", raw, err)
	}

	// Up to the ceiling exactly is granted, and shown exactly; one more is not.
	a, err := h.admin.GrantCredits(t.Context(), acct, c-10)
	if err != nil || a.Credits != c-3 {
		t.Fatalf("grant up to the ceiling: %+v, %v", a, err)
	}
	if got := h.balance(key); got != c-3 {
		t.Fatalf("GET /v1/me credits %d, want %d", got, c-3)
	}
	e := expectAPIError(t, h.adminPost("/admin/v1/accounts/"+acct+"/credits", map[string]any{"amount": 1}), http.StatusBadRequest, apierr.CodeInvalidRequest)
	if msg, _ := e["message"].(string); !strings.Contains(msg, fmt.Sprintf("above the ceiling of %d credits", c)) {
		t.Fatalf("grant at the ceiling: %v", e)
	}
	if got := h.balance(key); got != c-3 {
		t.Fatalf("a refused grant moved the balance to %d", got)
	}
	// Negative and zero amounts stay refused as before.
	for _, amount := range []int64{0, -1, math.MinInt64} {
		expectAPIError(t, h.adminPost("/admin/v1/accounts/"+acct+"/credits", map[string]any{"amount": amount}), http.StatusBadRequest, apierr.CodeInvalidRequest)
	}
	if got := h.balance(key); got != c-3 {
		t.Fatalf("refused grants moved the balance to %d", got)
	}
}
