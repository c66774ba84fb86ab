package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/api"
)

func TestWebhookEndpointsAPI(t *testing.T) {
	h := start(t, withWebhooks(newFakeClock()))
	acct, key := h.account("pro", 0)
	_, otherKey := h.account("pro", 0)

	created := expectAPIStatus(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://127.0.0.1:9/in"}), http.StatusCreated)
	id, _ := created["id"].(string)
	secret, _ := created["secret"].(string)
	if !strings.HasPrefix(id, "whk_") || !strings.HasPrefix(secret, "whsec_") || len(secret) < 40 ||
		created["object"] != "webhook_endpoint" || created["url"] != "http://127.0.0.1:9/in" {
		t.Fatalf("created endpoint: %v", created)
	}
	if ev, _ := created["events"].([]any); len(ev) != 2 || ev[0] != "video.completed" || ev[1] != "video.failed" {
		t.Fatalf("default events: %v", created["events"])
	}
	only := expectAPIStatus(t, h.do("POST", "/v1/webhooks", key,
		map[string]any{"url": "http://127.0.0.1:9/f", "events": []string{"video.failed", "video.failed"}}), http.StatusCreated)
	if ev, _ := only["events"].([]any); len(ev) != 1 || ev[0] != "video.failed" {
		t.Fatalf("events filter: %v", only["events"])
	}

	list := h.do("GET", "/v1/webhooks", key, nil)
	if l := expectAPIStatus(t, list, http.StatusOK); len(l["data"].([]any)) != 2 || strings.Contains(string(list.Body), "whsec_") {
		t.Fatalf("list: %s", list.Body)
	}
	if l := expectAPIStatus(t, h.do("GET", "/v1/webhooks", otherKey, nil), http.StatusOK); len(l["data"].([]any)) != 0 {
		t.Fatalf("another account sees endpoints: %v", l)
	}
	expectAPIError(t, h.do("DELETE", "/v1/webhooks/"+id, otherKey, nil), http.StatusNotFound, "not_found")
	del := expectAPIStatus(t, h.do("DELETE", "/v1/webhooks/"+id, key, nil), http.StatusOK)
	if del["id"] != id || del["deleted"] != true {
		t.Fatalf("delete: %v", del)
	}
	expectAPIError(t, h.do("DELETE", "/v1/webhooks/"+id, key, nil), http.StatusNotFound, "not_found")
	if l := expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK); len(l["data"].([]any)) != 1 {
		t.Fatalf("after delete: %v (account %s)", l, acct)
	}
}

// The production guard: only public https, every private spelling refused.
func TestWebhookURLsRefused(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 0)
	for _, tc := range []struct {
		name string
		body any
		code string
	}{
		{"plain http", map[string]any{"url": "http://93.184.215.14/hook"}, "invalid_url"},
		{"loopback", map[string]any{"url": "https://127.0.0.1/hook"}, "invalid_url"},
		{"decimal loopback", map[string]any{"url": "https://2130706433/hook"}, "invalid_url"},
		{"octal loopback", map[string]any{"url": "https://0177.0.0.1/hook"}, "invalid_url"},
		{"hex loopback", map[string]any{"url": "https://0x7f.0.0.1/hook"}, "invalid_url"},
		{"IPv4-mapped IPv6 loopback", map[string]any{"url": "https://[::ffff:127.0.0.1]/hook"}, "invalid_url"},
		{"IPv6 loopback", map[string]any{"url": "https://[::1]/hook"}, "invalid_url"},
		{"localhost", map[string]any{"url": "https://localhost/hook"}, "invalid_url"},
		{"private 10/8", map[string]any{"url": "https://10.1.2.3/hook"}, "invalid_url"},
		{"private 192.168/16", map[string]any{"url": "https://192.168.0.10/hook"}, "invalid_url"},
		{"link-local", map[string]any{"url": "https://169.254.10.10/hook"}, "invalid_url"},
		{"cloud metadata", map[string]any{"url": "https://169.254.169.254/latest/meta-data"}, "invalid_url"},
		{"metadata name", map[string]any{"url": "https://metadata.google.internal/computeMetadata"}, "invalid_url"},
		{"unique-local IPv6", map[string]any{"url": "https://[fd00::1]/hook"}, "invalid_url"},
		{"credentials", map[string]any{"url": "https://user:pw@93.184.215.14/hook"}, "invalid_url"},
		{"not a URL", map[string]any{"url": "::not a url"}, "invalid_url"},
		{"too long", map[string]any{"url": "https://93.184.215.14/" + strings.Repeat("a", 2100)}, "invalid_url"},
		{"missing url", map[string]any{"events": []string{"video.failed"}}, "invalid_request"},
		{"url not a string", map[string]any{"url": 42}, "invalid_request"},
		{"unknown event", map[string]any{"url": "https://93.184.215.14/hook", "events": []string{"video.started"}}, "invalid_request"},
		{"empty events", map[string]any{"url": "https://93.184.215.14/hook", "events": []string{}}, "invalid_request"},
		{"unknown field", map[string]any{"url": "https://93.184.215.14/hook", "secret": "mine"}, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectAPIError(t, h.do("POST", "/v1/webhooks", key, tc.body), http.StatusBadRequest, tc.code)
			d := errDetails(t, e)
			if tc.code == "invalid_url" && (d["field"] != "url" || d["reason"] == "") {
				t.Fatalf("invalid_url without a reason: %v", e)
			}
		})
	}
	if l := expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK); len(l["data"].([]any)) != 0 {
		t.Fatalf("a refused registration was written: %v", l)
	}
	// A public address literal needs no DNS and is accepted.
	expectAPIStatus(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://93.184.215.14/hook"}), http.StatusCreated)
}

// Concurrent registrations on several keys of one account: exactly five win.
func TestWebhookCapUnderConcurrency(t *testing.T) {
	h := start(t, withWebhooks(newFakeClock()))
	acct, key := h.account("pro", 0)
	_, key2 := h.newKey(acct)
	var wg sync.WaitGroup
	results := make(chan response, 12)
	for i := range 12 {
		k := key
		if i%2 == 1 {
			k = key2
		}
		wg.Go(func() { results <- h.do("POST", "/v1/webhooks", k, map[string]any{"url": "http://127.0.0.1:9/in"}) })
	}
	wg.Wait()
	close(results)
	won := 0
	for r := range results {
		if r.Status == http.StatusCreated {
			won++
			continue
		}
		e := expectAPIError(t, r, http.StatusConflict, "webhook_limit_reached")
		if d := errDetails(t, e); jsonInt(t, d["max_endpoints"]) != 5 || len(d["existing_webhook_ids"].([]any)) != 5 {
			t.Fatalf("limit details: %v", d)
		}
	}
	if won != 5 {
		t.Fatalf("%d registrations won, want 5", won)
	}
	if l := expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK); len(l["data"].([]any)) != 5 {
		t.Fatalf("list after the race: %v", l)
	}
}

// Webhook registration and writes: 10 per minute per account, whatever the key.
func TestWebhookWriteRateLimit(t *testing.T) {
	h := start(t, withLimits(api.ContractLimits()), withWebhooks(newFakeClock()))
	acct, key := h.account("pro", 0)
	_, key2 := h.newKey(acct)
	for range 4 {
		id := expectAPIStatus(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://127.0.0.1:9/in"}), http.StatusCreated)["id"].(string)
		expectAPIStatus(t, h.do("DELETE", "/v1/webhooks/"+id, key2, nil), http.StatusOK)
	}
	id := expectAPIStatus(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://127.0.0.1:9/in"}), http.StatusCreated)["id"].(string)
	// A delivery's retry is a write too (each is a replicated write and a
	// request out), counted whether or not the delivery exists.
	retry := "/v1/webhooks/" + id + "/deliveries/evt_x." + id + "/retry"
	expectAPIError(t, h.do("POST", retry, key2, nil), http.StatusNotFound, "not_found")
	expectAPIRateLimited(t, h.do("POST", retry, key, nil))
	expectAPIRateLimited(t, h.do("POST", "/v1/webhooks", key2, map[string]any{"url": "http://127.0.0.1:9/in"}))
	expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK) // reads are not writes
}
