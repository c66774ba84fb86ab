package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// adminCounts is how many accounts and API keys the state holds, as the
// admin API's status shows them.
func (h *harness) adminCounts() (accounts, keys int) {
	h.t.Helper()
	raw, err := h.admin.Do(h.t.Context(), "GET", "/admin/v1/status", nil)
	var st struct {
		State struct {
			Accounts int `json:"accounts"`
			Keys     int `json:"keys"`
		} `json:"state"`
	}
	if err != nil || json.Unmarshal(raw, &st) != nil {
		h.t.Fatalf("status: %s (%v)", raw, err)
	}
	return st.State.Accounts, st.State.Keys
}

// liveKeys returns which of the keys GET /v1/me accepts, checking that
// each accepted one is account's and each other one is refused as a
// revoked key is.
func (h *harness) liveKeys(account string, keys ...string) []string {
	h.t.Helper()
	var live []string
	for _, k := range keys {
		r := h.do("GET", "/v1/me", k, nil)
		switch r.Status {
		case http.StatusOK:
			if id := r.json(h.t)["id"]; id != account {
				h.t.Fatalf("a key answered for account %v, want %s", id, account)
			}
			live = append(live, k)
		case http.StatusUnauthorized:
		default:
			h.t.Fatalf("GET /v1/me: %d %s", r.Status, r.Body)
		}
	}
	return live
}

// TestAPIAdminAccountOnce: an account creation with an idempotency key
// opens one account however often it is sent, the retries racing; every
// answer carries a new API key, and of the keys those creations made
// exactly one works at the end, one an answer carried, so whichever answer
// the app kept is the account's one key. A replay says so
// (Idempotent-Replayed) and revokes the key the answer before it carried.
// Another request under the key is a 409 naming the account and changes
// nothing; without a key every request opens an account.
func TestAPIAdminAccountOnce(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	accounts0, keys0 := h.adminCounts()
	var mu sync.Mutex
	var answers []admin.CreatedAccount
	racing(t, 8, "create", func() error {
		a, err := h.admin.CreateAccountOnce(ctx, "Acme", "pro", 100, "signup-7")
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, a)
		return err
	})
	acct := answers[0].AccountID
	secrets := map[string]bool{}
	for _, a := range answers {
		if a.AccountID != acct || a.Account.ID != acct || a.Account.Credits != 100 || a.APIKey == "" {
			t.Fatalf("answers %+v: want one account with its 100 credits", answers)
		}
		secrets[a.APIKey] = true
	}
	if len(secrets) != len(answers) {
		t.Fatalf("%d answers carried %d keys: want a new key in every one", len(answers), len(secrets))
	}
	if accounts, keys := h.adminCounts(); accounts != accounts0+1 || keys != keys0+len(answers) {
		t.Fatalf("%d accounts and %d keys after %d sends of one keyed creation; want %d and %d",
			accounts, keys, len(answers), accounts0+1, keys0+len(answers))
	}
	all := make([]string, len(answers))
	for i, a := range answers {
		all[i] = a.APIKey
	}
	live := h.liveKeys(acct, all...)
	if len(live) != 1 {
		t.Fatalf("%d of the keys the creations made work, want exactly 1", len(live))
	}
	if got := h.balance(live[0]); got != 100 {
		t.Fatalf("balance %d, want the opening 100 once", got)
	}

	body := map[string]any{"name": "Acme", "plan": "pro", "credits": 100, "idempotency_key": "signup-7"}
	r := h.adminPost("/admin/v1/accounts", body)
	replay := expectAPIStatus(t, r, http.StatusCreated)
	key, _ := replay["api_key"].(string)
	if r.Header.Get("Idempotent-Replayed") != "true" || replay["account_id"] != acct || replay["account"].(map[string]any)["id"] != acct {
		t.Fatalf("replay: %d %v %s", r.Status, r.Header, r.Body)
	}
	if got := h.liveKeys(acct, append(all, key)...); len(got) != 1 || got[0] != key {
		t.Fatal("after a replay the key it answered is not the one live key")
	}
	if r := h.adminPost("/admin/v1/accounts", map[string]any{"name": "Bolt", "plan": "pro", "idempotency_key": "signup-8"}); r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a first keyed creation: %d %v %s", r.Status, r.Header, r.Body)
	}

	accounts1, keys1 := h.adminCounts()
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"key reused for other credits", map[string]any{"name": "Acme", "plan": "pro", "credits": 101, "idempotency_key": "signup-7"}, http.StatusConflict, apierr.CodeDuplicateRequest},
		{"key reused for another plan", map[string]any{"name": "Acme", "plan": "max", "credits": 100, "idempotency_key": "signup-7"}, http.StatusConflict, apierr.CodeDuplicateRequest},
		{"key reused for another name", map[string]any{"name": "Acme ", "plan": "pro", "credits": 100, "idempotency_key": "signup-7"}, http.StatusConflict, apierr.CodeDuplicateRequest},
		{"a key too long", map[string]any{"name": "Acme", "plan": "pro", "idempotency_key": strings.Repeat("k", 256)}, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"a key that is not a string", map[string]any{"name": "Acme", "plan": "pro", "idempotency_key": 7}, http.StatusBadRequest, apierr.CodeInvalidRequest},
	} {
		r := h.adminPost("/admin/v1/accounts", c.body)
		if r.Status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
		if c.status == http.StatusConflict && !strings.Contains(string(r.Body), acct) {
			t.Errorf("%s: the refusal does not name the account the key opened: %s", c.name, r.Body)
		}
		if accounts, keys := h.adminCounts(); accounts != accounts1 || keys != keys1 {
			t.Fatalf("%s: a refused creation made accounts or keys (%d, %d; were %d, %d)", c.name, accounts, keys, accounts1, keys1)
		}
		if got := h.liveKeys(acct, key); len(got) != 1 {
			t.Fatalf("%s: a refused creation revoked the live key", c.name)
		}
	}

	ids := map[string]bool{}
	for range 2 {
		a, err := h.admin.CreateAccount(ctx, "Acme", "pro", 100)
		if err != nil {
			t.Fatal(err)
		}
		ids[a.AccountID] = true
	}
	if accounts, _ := h.adminCounts(); len(ids) != 2 || ids[acct] || accounts != accounts1+2 {
		t.Fatalf("two creations without a key opened %v (%d accounts, were %d), want two new accounts", ids, accounts, accounts1)
	}
}
