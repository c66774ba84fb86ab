package server_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/api"
)

// expectRateLimited checks a 429: the envelope, retryable, retry_after_seconds of
// at least 1 and a matching Retry-After header.
func expectAPIRateLimited(t *testing.T, r response) map[string]any {
	t.Helper()
	e := expectAPIError(t, r, http.StatusTooManyRequests, "rate_limited")
	secs := jsonInt(t, e["retry_after_seconds"])
	if secs < 1 || secs > 24*3600 {
		t.Fatalf("retry_after_seconds = %d", secs)
	}
	hdr, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || int64(hdr) != secs {
		t.Fatalf("Retry-After header %q, want %d", r.Header.Get("Retry-After"), secs)
	}
	return e
}

// TestAPIRateLimits runs the contract's limits: video creation per plan, and the
// per-key and per-account request limits shared across an account's keys.
func TestAPIRateLimits(t *testing.T) {
	t.Parallel()
	h := start(t, withLimits(api.ContractLimits()))

	t.Run("premium creation: 6 per minute", func(t *testing.T) {
		acct, key := h.account("pro", 1000)
		_, key2 := h.newKey(acct)
		for i := 0; i < 6; i++ {
			h.create(key, autoReq("duration_seconds", 5))
		}
		expectAPIRateLimited(t, h.do("POST", "/v1/videos", key, autoReq("duration_seconds", 5)))
		// Per account: another key of the account does not get more.
		expectAPIRateLimited(t, h.do("POST", "/v1/videos", key2, autoReq("duration_seconds", 5)))
		if h.total(key) != 6 || h.balance(key) != 1000-6*3 {
			t.Fatalf("a refused create was created or charged: total %d balance %d", h.total(key), h.balance(key))
		}
		// Reads are not creation and still work; another account is unaffected.
		h.me(key)
		_, otherKey := h.account("max", 100)
		h.create(otherKey, autoReq("duration_seconds", 5))
	})

	// A create refused because the account cannot pay for it, or because
	// its Idempotency-Key names another body, made nothing and does not use
	// the quota: a client told 402 that retries after buying credits is not
	// then told 429.
	t.Run("refused creates give their token back", func(t *testing.T) {
		_, key := h.account("pro", 20)
		for range 7 {
			expectAPIError(t, h.do("POST", "/v1/videos", key, autoReq("duration_seconds", 60)), http.StatusPaymentRequired, "insufficient_credits")
		}
		expectAPIStatus(t, h.do("POST", "/v1/videos", key, autoReq("duration_seconds", 5), "Idempotency-Key", "k1"), http.StatusCreated)
		expectAPIError(t, h.do("POST", "/v1/videos", key, autoReq("duration_seconds", 10), "Idempotency-Key", "k1"), http.StatusConflict, "duplicate_request")
		for range 5 {
			h.create(key, autoReq("duration_seconds", 5))
		}
		expectAPIRateLimited(t, h.do("POST", "/v1/videos", key, autoReq("duration_seconds", 5)))
		if h.total(key) != 6 || h.balance(key) != 20-6*3 {
			t.Fatalf("total %d balance %d, want 6 videos and %d credits", h.total(key), h.balance(key), 20-6*3)
		}
	})

	t.Run("free creation: 2 per minute", func(t *testing.T) {
		_, key := h.account("free", 0)
		h.create(key, autoReq()) // the preview
		// A refusal of the free plan keeps its token (an upgrade moves the
		// account to the premium limits).
		expectAPIError(t, h.do("POST", "/v1/videos", key, autoReq()), http.StatusForbidden, "free_limit_reached")
		expectAPIRateLimited(t, h.do("POST", "/v1/videos", key, autoReq()))
	})

	t.Run("120 per key, 240 per account", func(t *testing.T) {
		acct, key1 := h.account("pro", 0)
		_, key2 := h.newKey(acct)
		_, key3 := h.newKey(acct)
		for i := 0; i < 120; i++ {
			if r := h.do("GET", "/v1/me", key1, nil); r.Status != http.StatusOK {
				t.Fatalf("request %d of key 1: %d %s", i+1, r.Status, r.Body)
			}
		}
		expectAPIRateLimited(t, h.do("GET", "/v1/me", key1, nil))
		expectAPIRateLimited(t, h.do("GET", "/v1/videos", key1, nil))
		// The second key still works until the account's 240 are spent.
		for i := 0; i < 120; i++ {
			if r := h.do("GET", "/v1/me", key2, nil); r.Status != http.StatusOK {
				t.Fatalf("request %d of key 2: %d %s", i+1, r.Status, r.Body)
			}
		}
		// A third key has its own 120 untouched, but the account has none left.
		expectAPIRateLimited(t, h.do("GET", "/v1/me", key3, nil))
		// Another account is not affected.
		_, other := h.account("pro", 0)
		h.me(other)
		// The root needs no key and is not limited by the account.
		expectAPIStatus(t, h.do("GET", "/v1", "", nil), http.StatusOK)
	})
}
