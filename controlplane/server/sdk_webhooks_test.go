package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// sdkClient is a client of h's public API with key, retrying fast.
func sdkClient(t *testing.T, base, key string) *client.Client {
	t.Helper()
	c, err := client.New(base, key, client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allowPrivateWebhooks lets endpoints on loopback register.
func allowPrivateWebhooks(c *server.Config) { c.DevAllowPrivateWebhooks = true }

// The SDK registers endpoints (the secret in the answer only, the default
// events, the sixth refused) and deletes them (a second delete, and an
// unknown id, are not_found).
func TestSDKWebhookCreateDelete(t *testing.T) {
	t.Parallel()
	h := start(t, allowPrivateWebhooks)
	_, key := h.account("pro", 1000)
	c := sdkClient(t, h.base, key)
	ctx := context.Background()
	hookURL := newReceiver(t, func(int) int { return http.StatusNoContent }).srv.URL + "/hook"

	w, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: hookURL,
		Events: []string{client.EventVideoCanceled, client.EventWebhookDisabled, client.EventVideoCanceled}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(w.ID, "whk_") || !strings.HasPrefix(w.Secret, "whsec_") || w.URL != hookURL ||
		w.Status != client.WebhookEnabled || w.CreatedAt == 0 ||
		!slices.Equal(w.Events, []string{client.EventVideoCanceled, client.EventWebhookDisabled}) {
		t.Fatalf("registered %+v", w)
	}
	def, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: hookURL})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(def.Events, []string{client.EventVideoCompleted, client.EventVideoFailed}) || def.Secret == w.Secret {
		t.Fatalf("default events %v, secret %q beside %q", def.Events, def.Secret, w.Secret)
	}
	l, err := c.ListWebhooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Data) != 2 || l.Data[0].ID != w.ID || l.Data[0].Secret != "" || l.Data[1].ID != def.ID {
		t.Fatalf("listed %+v", l.Data)
	}
	var ids []string
	for _, e := range l.Data {
		ids = append(ids, e.ID)
	}
	for range 3 {
		e, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: hookURL})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}

	_, err = c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: hookURL})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != client.CodeWebhookLimitReached || e.Retryable {
		t.Fatalf("sixth registration: %v", err)
	}
	if existing, _ := e.Details["existing_webhook_ids"].([]any); len(existing) != 5 {
		t.Fatalf("sixth registration's details %v", e.Details)
	}
	if _, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: hookURL, Events: []string{"video.exploded"}}); !client.IsCode(err, client.CodeInvalidRequest) {
		t.Fatalf("an unknown event type: %v", err)
	}

	d, err := c.DeleteWebhook(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if *d != (client.WebhookDeleted{ID: ids[0], Object: "webhook_endpoint", Deleted: true}) {
		t.Fatalf("deleted %+v", d)
	}
	if l, err = c.ListWebhooks(ctx); err != nil || len(l.Data) != 4 || l.Data[0].ID != ids[1] {
		t.Fatalf("after a delete: %+v (%v)", l, err)
	}
	// Called again (a first attempt, not a retry), the delete is answered 404.
	for _, id := range []string{ids[0], "whk_unknown"} {
		if _, err := c.DeleteWebhook(ctx, id); !errors.As(err, &e) || e.Status != http.StatusNotFound || e.Code != client.CodeNotFound {
			t.Fatalf("delete %s: %v, want not_found", id, err)
		}
	}
	// Another account's endpoint is not found either, and stays.
	_, otherKey := h.account("pro", 10)
	if _, err := sdkClient(t, h.base, otherKey).DeleteWebhook(ctx, ids[1]); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("another account's delete: %v", err)
	}
	if _, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: hookURL}); err != nil {
		t.Fatalf("a fifth endpoint after a delete: %v", err)
	}
}

// loseAnswers forwards to the API and, for the first request of each
// "METHOD path-prefix" in lose, loses the answer after the server handled
// it: the client sees the connection close.
type loseAnswers struct {
	mu   sync.Mutex
	lose map[string]bool
	seen map[string]int // "METHOD path" → requests
}

func (p *loseAnswers) handler(t *testing.T, target string) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen[r.Method+" "+r.URL.Path]++
		drop := false
		for k := range p.lose {
			if m, prefix, _ := strings.Cut(k, " "); m == r.Method && strings.HasPrefix(r.URL.Path, prefix) && p.lose[k] {
				p.lose[k], drop = false, true
			}
		}
		p.mu.Unlock()
		if !drop {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		if rec.Code >= 300 {
			t.Errorf("%s %s through the proxy: %d %s", r.Method, r.URL.Path, rec.Code, rec.Body)
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
}

func (p *loseAnswers) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[key]
}

// Answers lost on the way back: a registration is sent once (the endpoint
// exists, and a retry would have made a second with another secret); a
// delete is retried, and its retry's 404 is the delete the lost answer
// reported.
func TestSDKWebhookLostAnswers(t *testing.T) {
	t.Parallel()
	h := start(t, allowPrivateWebhooks)
	_, key := h.account("pro", 1000)
	p := &loseAnswers{lose: map[string]bool{"POST /v1/webhooks": true, "DELETE /v1/webhooks/": true}, seen: map[string]int{}}
	proxy := httptest.NewServer(p.handler(t, h.base))
	t.Cleanup(proxy.Close)
	c := sdkClient(t, proxy.URL, key)
	ctx := context.Background()

	_, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: "http://127.0.0.1:1/hook"})
	var e *client.Error
	if err == nil || errors.As(err, &e) {
		t.Fatalf("a registration whose answer was lost: %v, want a network error", err)
	}
	if n := p.count("POST /v1/webhooks"); n != 1 {
		t.Fatalf("the registration was sent %d times, want once", n)
	}
	l, err := c.ListWebhooks(ctx)
	if err != nil || len(l.Data) != 1 {
		t.Fatalf("after the lost answer: %+v (%v), want the one endpoint", l, err)
	}
	id := l.Data[0].ID

	d, err := c.DeleteWebhook(ctx, id)
	if err != nil {
		t.Fatalf("a delete whose answer was lost: %v", err)
	}
	if *d != (client.WebhookDeleted{ID: id, Object: "webhook_endpoint", Deleted: true}) {
		t.Fatalf("deleted %+v", d)
	}
	if n := p.count("DELETE /v1/webhooks/" + id); n != 2 {
		t.Fatalf("the delete was sent %d times, want 2 (the lost one and its retry)", n)
	}
	if l, err = c.ListWebhooks(ctx); err != nil || len(l.Data) != 0 {
		t.Fatalf("after the delete: %+v (%v)", l, err)
	}
	// The same delete, answered: its first attempt's 404 is an error.
	if _, err := c.DeleteWebhook(ctx, id); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("deleting a deleted endpoint: %v", err)
	}
}
