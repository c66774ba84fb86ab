package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAPIAuthentication covers the Authentication section: both key headers, the
// three 401 codes, the one open endpoint and the request id on every answer.
func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	h := start(t)
	acct, keyID, key := h.fullAccount("pro", 10)
	_, key2 := h.newKey(acct)

	t.Run("bearer and X-API-Key both authenticate", func(t *testing.T) {
		for name, hdr := range map[string][]string{
			"bearer":           {"Authorization", "Bearer " + key},
			"bearer lowercase": {"Authorization", "bearer " + key},
			"x-api-key":        {"X-API-Key", key},
			"second key":       {"X-API-Key", key2},
		} {
			r := h.do("GET", "/v1/me", "", nil, hdr...)
			me := expectAPIStatus(t, r, http.StatusOK)
			if me["object"] != "account" || me["id"] != acct {
				t.Fatalf("%s: GET /v1/me answered %s", name, r.Body)
			}
		}
	})

	t.Run("401 codes", func(t *testing.T) {
		cases := []struct {
			name    string
			headers []string
			code    string
		}{
			{"no header", nil, "missing_api_key"},
			{"empty bearer", []string{"Authorization", "Bearer "}, "missing_api_key"},
			{"bare bearer", []string{"Authorization", "Bearer"}, "missing_api_key"},
			{"empty X-API-Key", []string{"X-API-Key", ""}, "missing_api_key"},
			{"unknown bearer key", []string{"Authorization", "Bearer vf_live_not_a_real_key"}, "invalid_api_key"},
			{"unknown X-API-Key", []string{"X-API-Key", "vf_live_not_a_real_key"}, "invalid_api_key"},
			{"key with a character changed", []string{"X-API-Key", key[:len(key)-1] + flipChar(key[len(key)-1])}, "invalid_api_key"},
		}
		for _, c := range cases {
			for _, path := range []string{"/v1/me", "/v1/videos", "/v1/models"} {
				r := h.do("GET", path, "", nil, c.headers...)
				expectAPIError(t, r, http.StatusUnauthorized, c.code)
			}
			// Writes are refused the same way, before the body is looked at.
			r := h.do("POST", "/v1/videos", "", map[string]any{"mode": "auto", "prompt": "x"}, c.headers...)
			expectAPIError(t, r, http.StatusUnauthorized, c.code)
		}
	})

	// A key sent in another form than Bearer is not read, and the 401 says
	// which form it was, so a client does not take it for a wrong key.
	t.Run("a key under another scheme", func(t *testing.T) {
		for _, c := range []struct{ header, says string }{
			{"Basic " + key, "uses the Basic scheme"},
			{key, "has no scheme"},
			{"Bearer ", "says Bearer but carries no key"},
			{strings.Repeat("Token", 5) + " " + key, "uses a scheme, which"},
		} {
			r := h.do("GET", "/v1/me", "", nil, "Authorization", c.header)
			e := expectAPIError(t, r, http.StatusUnauthorized, "missing_api_key")
			if msg, _ := e["message"].(string); !strings.Contains(msg, c.says) || strings.Contains(msg, key) {
				t.Errorf("Authorization %.12q…: message %q, want it to say %q and not echo the key", c.header, msg, c.says)
			}
		}
	})

	t.Run("revoked key", func(t *testing.T) {
		if _, err := h.admin.RevokeKey(context.Background(), keyID); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		for _, hdr := range [][]string{{"Authorization", "Bearer " + key}, {"X-API-Key", key}} {
			expectAPIError(t, h.do("GET", "/v1/me", "", nil, hdr...), http.StatusUnauthorized, "api_key_revoked")
			expectAPIError(t, h.do("POST", "/v1/videos", "", map[string]any{"mode": "auto", "prompt": "x"}, hdr...),
				http.StatusUnauthorized, "api_key_revoked")
		}
		// The account's other key is unaffected.
		expectAPIStatus(t, h.do("GET", "/v1/me", key2, nil), http.StatusOK)
	})

	t.Run("GET /v1 needs no key", func(t *testing.T) {
		for _, k := range []string{"", "vf_live_not_a_real_key", key} {
			r := h.do("GET", "/v1", k, nil)
			root := expectAPIStatus(t, r, http.StatusOK)
			if len(root) == 0 {
				t.Fatalf("GET /v1 answered an empty object")
			}
		}
	})

	t.Run("every answer carries a fresh request id", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 5; i++ {
			r := h.do("GET", "/v1/me", key2, nil)
			id := r.Header.Get("X-Request-Id")
			if !strings.HasPrefix(id, "req_") || seen[id] {
				t.Fatalf("request id %q missing, malformed or reused", id)
			}
			seen[id] = true
			e := expectAPIError(t, h.do("GET", "/v1/me", "", nil), http.StatusUnauthorized, "missing_api_key")
			if seen[e["request_id"].(string)] {
				t.Fatalf("request id reused: %v", e["request_id"])
			}
			seen[e["request_id"].(string)] = true
		}
	})
}

func flipChar(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// TestAPIRoutes covers unknown paths (404 not_found) and known paths with a wrong
// method (405 with the envelope and an Allow header), with and without a key.
func TestAPIRoutes(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 10)

	for _, k := range []string{"", key} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v2/me"},
			{"GET", "/v1/nope"},
			{"POST", "/v1/unknown"},
			{"GET", "/v1/videos/x/y/z"},
			{"DELETE", "/v1/does-not-exist"},
		} {
			r := h.do(c.method, c.path, k, nil)
			expectAPIError(t, r, http.StatusNotFound, "not_found")
		}
		for _, c := range []struct {
			method, path string
			allow        []string
		}{
			{"DELETE", "/v1/me", []string{"GET"}},
			{"POST", "/v1/me", []string{"GET"}},
			{"POST", "/v1/models", []string{"GET"}},
			{"PUT", "/v1/videos", []string{"GET", "POST"}},
			{"DELETE", "/v1/videos", []string{"GET", "POST"}},
			{"DELETE", "/v1/videos/vid_123", []string{"GET"}},
			{"GET", "/v1/videos/vid_123/render", []string{"POST"}},
			{"PATCH", "/v1/folders", []string{"GET", "POST"}},
			{"POST", "/v1", []string{"GET"}},
		} {
			r := h.do(c.method, c.path, k, nil)
			expectAPIError(t, r, http.StatusMethodNotAllowed, "invalid_request")
			allow := r.Header.Get("Allow")
			if allow == "" {
				t.Fatalf("%s %s: 405 without an Allow header", c.method, c.path)
			}
			for _, m := range c.allow {
				if !strings.Contains(allow, m) {
					t.Fatalf("%s %s: Allow %q lacks %s", c.method, c.path, allow, m)
				}
			}
		}
	}
}

// hideLength wraps a reader so the client cannot learn its length and must send
// the body chunked, without Content-Length.
type hideLength struct{ r io.Reader }

func (h hideLength) Read(p []byte) (int, error) { return h.r.Read(p) }

// TestAPIPayloadTooLarge covers the 256 KB body limit, declared and chunked.
func TestAPIPayloadTooLarge(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 1000)
	const limit = 256 * 1024

	// body builds a create request whose JSON is exactly n bytes.
	body := func(n int) []byte {
		head, tail := `{"mode":"auto","prompt":"`, `"}`
		return []byte(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
	}
	post := func(b []byte, chunked bool) response {
		var rd io.Reader = bytes.NewReader(b)
		if chunked {
			rd = hideLength{rd}
		}
		req, err := http.NewRequest("POST", h.base+"/v1/videos", rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if chunked && req.ContentLength != 0 {
			t.Fatalf("request would declare its length")
		}
		return h.send(req)
	}

	for _, chunked := range []bool{false, true} {
		for _, n := range []int{limit, limit + 1, 2 * limit} {
			r := post(body(n), chunked)
			expectAPIError(t, r, http.StatusRequestEntityTooLarge, "payload_too_large")
		}
		// Just under the limit the body is parsed: the prompt is too long, a 400
		// about the content.
		r := post(body(limit-1), chunked)
		e := expectAPIError(t, r, http.StatusBadRequest, "invalid_request")
		if errDetails(t, e)["field"] != "prompt" {
			t.Fatalf("chunked=%v: want a prompt error under the limit, got %s", chunked, r.Body)
		}
	}
	// The same limit holds on folder creation, and no video was created by any of it.
	big := `{"name":"` + strings.Repeat("n", limit) + `"}`
	expectAPIError(t, h.do("POST", "/v1/folders", key, big), http.StatusRequestEntityTooLarge, "payload_too_large")
	if n := h.total(key); n != 0 {
		t.Fatalf("refused bodies created %d videos", n)
	}
	// Even without a key the size is refused (never parsed).
	r := h.do("POST", "/v1/videos", "", body(limit))
	if r.Status != http.StatusRequestEntityTooLarge && r.Status != http.StatusUnauthorized {
		t.Fatalf("oversized body without key: %d %s", r.Status, r.Body)
	}
	r.errorCode(t)
}
