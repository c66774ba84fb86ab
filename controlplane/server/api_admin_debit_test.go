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
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.admin.Debit(ctx, acct, 30, "render-42"); err != nil {
				t.Errorf("debit: %v", err)
			}
		}()
	}
	wg.Wait()
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
