package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// TestAPIAdminDebit checks the app's debits: a retried key debits once, even when
// the retries race, and every bad debit gets the envelope with nothing taken.
func TestAPIAdminDebit(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	acct, key := h.account("pro", 100)
	racing(t, 8, "debit", func() error { _, err := h.admin.Debit(ctx, acct, 30, "render-42"); return err })
	if got := h.balance(key); got != 70 {
		t.Fatalf("balance %d after 8 retries of one debit, want 70", got)
	}
	for _, c := range []struct {
		name    string
		account string
		amount  int64
		key     string
		status  int
		code    string
	}{
		{"key reused for another amount", acct, 31, "render-42", http.StatusConflict, apierr.CodeDuplicateRequest},
		{"more than the balance", acct, 71, "render-43", http.StatusPaymentRequired, apierr.CodeInsufficientCredits},
		{"no key", acct, 5, "", http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"zero", acct, 0, "render-44", http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"unknown account", "acct_nope", 5, "render-45", http.StatusNotFound, apierr.CodeAccountNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.admin.Debit(ctx, c.account, c.amount, c.key)
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != c.status || e.Code != c.code {
				t.Fatalf("err %v, want %d %s", err, c.status, c.code)
			}
			if got := h.balance(key); got != 70 {
				t.Fatalf("a refused debit moved the balance to %d", got)
			}
		})
	}
}

// TestAPIAdminGrantOnce: a grant with an idempotency key adds its credits
// once however often it is sent, the retries racing, and a replay says so
// (Idempotent-Replayed); the key with another amount is a 409 and moves
// nothing; without a key every grant adds.
func TestAPIAdminGrantOnce(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	acct, key := h.account("pro", 100)
	racing(t, 8, "grant", func() error { _, err := h.admin.GrantCreditsOnce(ctx, acct, 50, "purchase-7"); return err })
	if got := h.balance(key); got != 150 {
		t.Fatalf("balance %d after 8 sends of one keyed grant of 50, want 150", got)
	}
	r := h.adminPost("/admin/v1/accounts/"+acct+"/credits", map[string]any{"amount": 50, "idempotency_key": "purchase-7"})
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" || r.json(t)["credits"] != float64(150) {
		t.Fatalf("replay: %d %v %s", r.Status, r.Header, r.Body)
	}
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"key reused for another amount", map[string]any{"amount": 51, "idempotency_key": "purchase-7"}, http.StatusConflict, apierr.CodeDuplicateRequest},
		{"a key too long", map[string]any{"amount": 1, "idempotency_key": string(make([]byte, 256))}, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"a key that is not a string", map[string]any{"amount": 1, "idempotency_key": 7}, http.StatusBadRequest, apierr.CodeInvalidRequest},
	} {
		r := h.adminPost("/admin/v1/accounts/"+acct+"/credits", c.body)
		if r.Status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
		if got := h.balance(key); got != 150 {
			t.Fatalf("%s: a refused grant moved the balance to %d", c.name, got)
		}
	}
	for range 2 {
		if _, err := h.admin.GrantCredits(ctx, acct, 5); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.balance(key); got != 160 {
		t.Fatalf("balance %d after two grants of 5 without a key, want 160", got)
	}
}

// racing runs call n times at once and fails the test on any error.
func racing(t *testing.T, n int, what string, call func() error) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}()
	}
	wg.Wait()
}
