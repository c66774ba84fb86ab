package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// fakeClock is the deliverer's clock, moved by the test. Until channels fire when
// Set reaches their time.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Until(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: t, ch: ch})
	return ch
}

// Set moves the clock to t and fires every wait that has run out.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	c.waiters = kept
}

// withWebhooks turns the development switch on (loopback receivers) and gives
// the deliverer the fake clock.
func withWebhooks(c *fakeClock) option {
	return func(cfg *server.Config) {
		cfg.DevAllowPrivateWebhooks = true
		cfg.WebhookClock = c
	}
}

// delivery is one request a receiver got.
type delivery struct {
	Header http.Header
	Body   []byte
	Event  map[string]any
}

// receiver is a real HTTP receiver on 127.0.0.1 that answers each request with
// the status answer gives for its 1-based number.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(n int) int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	rc := &receiver{t: t, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev map[string]any
		_ = json.Unmarshal(b, &ev)
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{Header: r.Header.Clone(), Body: b, Event: ev})
		n := len(rc.got)
		rc.mu.Unlock()
		status := rc.answer(n)
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// waitFor polls until the receiver got n requests.
func (rc *receiver) waitFor(n int) []delivery {
	rc.t.Helper()
	eventually(rc.t, func() bool { return len(rc.deliveries()) >= n }, "receiver to get %d requests (has %d)", n, len(rc.deliveries()))
	return rc.deliveries()
}

// eventually polls cond until it holds or 20 s pass.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		<-tick.C
	}
}

// registerWebhook registers url for events (nil: the default) and returns its id
// and secret.
func (h *harness) registerWebhook(key, url string, events ...string) (string, string) {
	h.t.Helper()
	body := map[string]any{"url": url}
	if events != nil {
		body["events"] = events
	}
	r := h.do("POST", "/v1/webhooks", key, body)
	m := expectAPIStatus(h.t, r, http.StatusCreated)
	return m["id"].(string), m["secret"].(string)
}

// failedVideo creates a video and has the operator fail it: a video.failed event.
func (h *harness) failedVideo(key string) string {
	h.t.Helper()
	r := h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5))
	id := expectAPIStatus(h.t, r, http.StatusCreated)["id"].(string)
	if _, err := h.admin.FailVideo(context.Background(), id, "cancelled by the operator"); err != nil {
		h.t.Fatalf("fail video: %v", err)
	}
	return id
}

// deliveriesOf reads the deliveries of one event through the admin API.
func (h *harness) deliveriesOf(eventID string) []admin.DeliveryJSON {
	h.t.Helper()
	out, err := h.admin.WebhookDeliveries(context.Background(), admin.DeliveryQuery{Event: eventID})
	if err != nil {
		h.t.Fatalf("admin webhook deliveries: %v", err)
	}
	return out.Data
}

// checkSigned verifies a delivery's signature at the fake clock's time and
// returns its event.
func checkSigned(t *testing.T, d delivery, secret string, now time.Time) map[string]any {
	t.Helper()
	if err := signature.Verify(secret, d.Header.Get(signature.HeaderName), d.Body, now, 0); err != nil {
		t.Fatalf("delivery signature: %v (header %q)", err, d.Header.Get(signature.HeaderName))
	}
	if d.Event == nil || d.Event["object"] != "event" {
		t.Fatalf("delivery body is not an event: %s", d.Body)
	}
	return d.Event
}

// restart stops the node and starts it again on the same data directory and
// Raft address.
func (h *harness) restart() {
	h.t.Helper()
	h.cfg.RaftListen = h.srv.Node.RaftAddr()
	h.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.Start(ctx, h.cfg)
	if err != nil {
		h.t.Fatalf("restart: %v", err)
	}
	h.srv, h.base = srv, srv.PublicURL()
	h.admin = &admin.Client{Server: "http://" + srv.AdminAddr(), Token: h.cfg.AdminToken}
}
