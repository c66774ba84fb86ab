package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Helpers shared by the api_*_test.go files: they check the contract's error
// envelope and shorten the common calls.

// expectError checks that r is the contract's error envelope with the given HTTP
// status and error.code and returns the error object. Every error must carry a
// message, a retryable flag, a request_id with the req_ prefix equal to the
// X-Request-Id header, and a JSON content type.
func expectAPIError(t *testing.T, r response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want HTTP %d %s, got %d: %s", status, code, r.Status, r.Body)
	}
	if got := r.errorCode(t); got != code {
		t.Fatalf("want error.code %q, got %q: %s", code, got, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type = %q, want application/json", ct)
	}
	e := r.json(t)["error"].(map[string]any)
	if msg, ok := e["message"].(string); !ok || strings.TrimSpace(msg) == "" {
		t.Fatalf("error.message must be a non-empty string: %s", r.Body)
	}
	retryable, ok := e["retryable"].(bool)
	if !ok {
		t.Fatalf("error.retryable must be a boolean: %s", r.Body)
	}
	wantRetry := status >= 500 || status == http.StatusTooManyRequests || code == "idempotency_in_flight"
	if retryable != wantRetry {
		t.Fatalf("error.retryable = %v for %d %s, want %v", retryable, status, code, wantRetry)
	}
	id, _ := e["request_id"].(string)
	if !strings.HasPrefix(id, "req_") {
		t.Fatalf("error.request_id %q lacks the req_ prefix", id)
	}
	if hdr := r.Header.Get("X-Request-Id"); hdr != id {
		t.Fatalf("X-Request-Id header %q differs from error.request_id %q", hdr, id)
	}
	if d, ok := e["details"]; ok {
		if _, isObj := d.(map[string]any); !isObj {
			t.Fatalf("error.details must be an object: %s", r.Body)
		}
	}
	return e
}

// details returns error.details of an error object, failing if it is absent.
func errDetails(t *testing.T, e map[string]any) map[string]any {
	t.Helper()
	d, ok := e["details"].(map[string]any)
	if !ok {
		t.Fatalf("error has no details object: %v", e)
	}
	return d
}

// links returns error.links of an error object, failing if it is absent.
func errLinks(t *testing.T, e map[string]any) map[string]any {
	t.Helper()
	l, ok := e["links"].(map[string]any)
	if !ok {
		t.Fatalf("error has no links object: %v", e)
	}
	return l
}

// expectStatus checks the status of a success answer and decodes its body.
func expectAPIStatus(t *testing.T, r response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want HTTP %d, got %d: %s", status, r.Status, r.Body)
	}
	if !strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_") {
		t.Fatalf("success answer lacks an X-Request-Id starting with req_: %q", r.Header.Get("X-Request-Id"))
	}
	return r.json(t)
}

// integer returns a JSON number that must be a whole number.
func jsonInt(t *testing.T, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) {
		t.Fatalf("want an integer, got %T %v", v, v)
	}
	return int64(f)
}

// create posts a video and expects 201.
func (h *harness) create(key string, body any) map[string]any {
	h.t.Helper()
	return expectAPIStatus(h.t, h.do("POST", "/v1/videos", key, body), http.StatusCreated)
}

// me reads GET /v1/me.
func (h *harness) me(key string) map[string]any {
	h.t.Helper()
	return expectAPIStatus(h.t, h.do("GET", "/v1/me", key, nil), http.StatusOK)
}

// balance is the account's credits as GET /v1/me shows them.
func (h *harness) balance(key string) int64 {
	h.t.Helper()
	return jsonInt(h.t, h.me(key)["credits"])
}

// total is the total of GET /v1/videos for the key's account.
func (h *harness) total(key string) int64 {
	h.t.Helper()
	return jsonInt(h.t, expectAPIStatus(h.t, h.do("GET", "/v1/videos", key, nil), http.StatusOK)["total"])
}

// fullAccount creates an account and returns its id, first key id and key.
func (h *harness) fullAccount(plan string, credits int64) (acct, keyID, key string) {
	h.t.Helper()
	a, err := h.admin.CreateAccount(context.Background(), "acct-"+plan, plan, credits)
	if err != nil {
		h.t.Fatalf("create account: %v", err)
	}
	return a.AccountID, a.KeyID, a.APIKey
}

// newKey adds a key to an account and returns its id and secret.
func (h *harness) newKey(acct string) (string, string) {
	h.t.Helper()
	k, err := h.admin.CreateKey(context.Background(), acct)
	if err != nil {
		h.t.Fatalf("create key: %v", err)
	}
	return k.KeyID, k.APIKey
}

// send performs a prepared request and reads the whole answer.
func (h *harness) send(req *http.Request) response {
	h.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// get fetches an absolute URL with no key.
func (h *harness) get(url string) response {
	h.t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.send(req)
}

// jsonEqual compares two values by their JSON encodings.
func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	return string(g) == string(w)
}

// concurrently sends one create per key in keys at the same time (keys may repeat)
// and returns the statuses and error codes. It is safe to use from the test
// goroutine only; the requests themselves run in their own goroutines and never
// touch t.
func (h *harness) concurrently(keys []string, body any) (statuses []int, codes []string) {
	h.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	type result struct {
		status int
		code   string
		err    error
	}
	out := make(chan result, len(keys))
	startGate := make(chan struct{})
	for _, k := range keys {
		go func(key string) {
			<-startGate
			req, err := http.NewRequest("POST", h.base+"/v1/videos", strings.NewReader(string(raw)))
			if err != nil {
				out <- result{err: err}
				return
			}
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- result{err: err}
				return
			}
			defer resp.Body.Close()
			var env struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&env)
			out <- result{status: resp.StatusCode, code: env.Error.Code}
		}(k)
	}
	close(startGate)
	for range keys {
		r := <-out
		if r.err != nil {
			h.t.Fatalf("concurrent create: %v", r.err)
		}
		statuses = append(statuses, r.status)
		codes = append(codes, r.code)
	}
	return statuses, codes
}
