package server_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// v1Count is how many v1= signatures a delivery's header carries.
func v1Count(d delivery) int { return strings.Count(d.Header.Get(signature.HeaderName), "v1=") }

// verifyWith checks d with the SDK's verifier and one secret at now.
func verifyWith(d delivery, secret string, now time.Time) error {
	return client.VerifyWebhook(secret, d.Header.Get(signature.HeaderName), d.Body, now, 0)
}

// sendTest asks for a test event to whk and returns the delivery's answer.
func (h *harness) sendTest(key, whk string) map[string]any {
	h.t.Helper()
	return expectAPIStatus(h.t, h.do("POST", "/v1/webhooks/"+whk+"/test", key, nil), http.StatusOK)
}

// A rotation's answer holds the new secret; for the overlap every delivery
// carries two signatures, each of which verifies with its own secret
// alone; after it, one signature, by the new secret only. The secrets are
// sealed at rest (a secrets key is set), the old one too.
func TestWebhookSecretRotationOverlap(t *testing.T) {
	clock := &fakeClock{now: time.Now()} // the API stamps the overlap's end on the system clock
	const overlap = time.Hour
	h := start(t, withWebhooks(clock), func(c *server.Config) {
		c.WebhookSecretOverlap = overlap
		c.SecretsKey = strings.Repeat("ab", 32)
	})
	acct, key := h.account("pro", 1000)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	whk, oldSecret := h.registerWebhook(key, rc.srv.URL+"/hook")

	d := h.sendTest(key, whk)
	if d["event_type"] != fsm.EventWebhookTest || d["status"] != fsm.DeliveryPending || d["webhook_id"] != whk {
		t.Fatalf("test delivery %v", d)
	}
	got := rc.waitFor(1)
	ev := checkSigned(t, got[0], oldSecret, clock.Now())
	data, _ := ev["data"].(map[string]any)
	hookObj, _ := data["webhook"].(map[string]any)
	if ev["type"] != fsm.EventWebhookTest || ev["id"] != strings.Split(d["id"].(string), ".")[0] || hookObj["id"] != whk ||
		hookObj["secret"] != nil || data["video"] != nil {
		t.Fatalf("test event %s", got[0].Body)
	}
	if n := v1Count(got[0]); n != 1 {
		t.Fatalf("before a rotation %d signatures, want 1", n)
	}

	rot := expectAPIStatus(t, h.do("POST", "/v1/webhooks/"+whk+"/rotate_secret", key, nil), http.StatusOK)
	newSecret, _ := rot["secret"].(string)
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == oldSecret || rot["status"] != "enabled" {
		t.Fatalf("rotation answer %v", rot)
	}
	if exp := jsonInt(t, rot["previous_secret_expires_at"]); exp < time.Now().Add(overlap-time.Minute).Unix() || exp > time.Now().Add(overlap).Unix() {
		t.Fatalf("previous_secret_expires_at %d, want about now + %s", exp, overlap)
	}
	list := expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK)
	if listed := list["data"].([]any)[0].(map[string]any); listed["secret"] != nil || listed["previous_secret_expires_at"] == nil {
		t.Fatalf("listed endpoint %v: no secret, the overlap's end", listed)
	}
	for _, st := range h.srv.Node.FSM.StoredSecrets() {
		if strings.Contains(st.Secret, "whsec_") {
			t.Fatalf("a secret is stored in the clear: %q", st.Secret)
		}
	}
	for _, w := range h.srv.Node.FSM.Webhooks(acct) {
		if w.OldSecret == "" || strings.Contains(w.OldSecret, "whsec_") {
			t.Fatalf("the previous secret is not kept sealed: %q", w.OldSecret)
		}
	}

	h.sendTest(key, whk)
	got = rc.waitFor(2)
	if n := v1Count(got[1]); n != 2 {
		t.Fatalf("during the overlap %d signatures (%q), want 2", n, got[1].Header.Get(signature.HeaderName))
	}
	for name, s := range map[string]string{"old": oldSecret, "new": newSecret} {
		if err := verifyWith(got[1], s, clock.Now()); err != nil {
			t.Fatalf("during the overlap the %s secret does not verify: %v", name, err)
		}
	}
	if err := verifyWith(got[1], "whsec_other", clock.Now()); !errors.Is(err, client.ErrSignatureMismatch) {
		t.Fatalf("another secret verifies: %v", err)
	}

	clock.Set(clock.Now().Add(overlap + time.Minute))
	h.sendTest(key, whk)
	got = rc.waitFor(3)
	if n := v1Count(got[2]); n != 1 {
		t.Fatalf("after the overlap %d signatures, want 1", n)
	}
	if err := verifyWith(got[2], newSecret, clock.Now()); err != nil {
		t.Fatalf("after the overlap the new secret does not verify: %v", err)
	}
	if err := verifyWith(got[2], oldSecret, clock.Now()); !errors.Is(err, client.ErrSignatureMismatch) {
		t.Fatalf("after the overlap the old secret: %v, want a mismatch", err)
	}
	// The attempt's record (leader's time past the overlap) forgot it.
	eventually(t, func() bool { return h.srv.Node.FSM.Webhooks(acct)[0].OldSecret == "" },
		"the state to forget the previous secret")
}

// An endpoint whose every attempt failed for the threshold (5 minutes of the
// fake clock here, 5 days by default) is disabled by the leader: the
// account's endpoint subscribed to webhook.disabled is told, nothing more is
// attempted to it, tests and retries are refused; enabling it sends what
// waited.
func TestWebhookDisabledAfterFailingThenEnabled(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock), func(c *server.Config) {
		c.WebhookDisableAfter = 5 * time.Minute
		c.WebhookDisableCheck = 20 * time.Millisecond
	})
	_, key := h.account("pro", 1000)
	var up atomic.Bool
	down := newReceiver(t, func(int) int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	watcher := newReceiver(t, func(int) int { return http.StatusNoContent })
	whk, _ := h.registerWebhook(key, down.srv.URL+"/hook")
	other, otherSecret := h.registerWebhook(key, watcher.srv.URL+"/hook", fsm.EventWebhookDisabled)
	vid := h.failedVideo(key)
	delivery := fsm.EventID(vid) + "." + whk

	t0 := failThrice(t, h, clock, down, vid)
	status := func() string {
		for _, w := range expectAPIStatus(t, h.do("GET", "/v1/webhooks", key, nil), http.StatusOK)["data"].([]any) {
			if m := w.(map[string]any); m["id"] == whk {
				return m["status"].(string)
			}
		}
		return ""
	}
	eventually(t, func() bool { return status() == "disabled" }, "the endpoint to be disabled")
	if m := h.adminGet("/metrics"); !strings.Contains(m, "vidfarm_webhook_endpoints_disabled 1") {
		t.Error("the metrics do not count the disabled endpoint")
	}

	got := watcher.waitFor(1)
	ev := checkSigned(t, got[0], otherSecret, clock.Now())
	if hookObj := ev["data"].(map[string]any)["webhook"].(map[string]any); ev["type"] != fsm.EventWebhookDisabled ||
		hookObj["id"] != whk || hookObj["status"] != "disabled" || hookObj["disabled_at"] == nil {
		t.Fatalf("webhook.disabled event %s", got[0].Body)
	}

	page := expectAPIStatus(t, h.do("GET", "/v1/webhooks/"+whk+"/deliveries", key, nil), http.StatusOK)
	if d := page["data"].([]any)[0].(map[string]any); d["status"] != fsm.DeliveryPending || d["next_retry_at"] != nil {
		t.Fatalf("the waiting delivery %v: pending, no next retry while disabled", d)
	}
	expectAPIError(t, h.do("POST", "/v1/webhooks/"+whk+"/test", key, nil), http.StatusConflict, "webhook_disabled")

	// Past the next retry's time nothing is attempted: a test event to the
	// other endpoint goes out in the same round, and when it is delivered
	// the disabled one still has its three requests.
	clock.Set(t0.Add(2 * time.Hour))
	test := h.sendTest(key, other)["id"].(string)
	eventually(t, func() bool {
		ds := h.deliveriesOf(strings.Split(test, ".")[0])
		return len(ds) == 1 && ds[0].State == fsm.DeliveryDelivered
	}, "the other endpoint's test event to be delivered")
	if n := len(down.deliveries()); n != 3 {
		t.Fatalf("the disabled endpoint got %d requests, want 3", n)
	}

	// A disabled endpoint is not active: beside it the account may have
	// five enabled ones, and enabling it then would make six.
	eventually(t, h.srv.Node.FSM.ActiveWebhookLimitOn, "the leader to count active endpoints only")
	var more []string
	for range fsm.MaxWebhooksPerAccount - 1 { // `other` is the first
		id, _ := h.registerWebhook(key, watcher.srv.URL+"/more", fsm.EventWebhookDisabled)
		more = append(more, id)
	}
	expectAPIError(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": watcher.srv.URL + "/more"}), http.StatusConflict, "webhook_limit_reached")
	e := expectAPIError(t, h.do("POST", "/v1/webhooks/"+whk+"/enable", key, nil), http.StatusConflict, "webhook_limit_reached")
	if d := errDetails(t, e); len(d["existing_webhook_ids"].([]any)) != fsm.MaxWebhooksPerAccount+1 {
		t.Fatalf("limit details %v: want every endpoint, the disabled one included", d)
	}
	if status() != "disabled" {
		t.Fatal("a refused enable enabled the endpoint")
	}
	for _, id := range more {
		expectAPIStatus(t, h.do("DELETE", "/v1/webhooks/"+id, key, nil), http.StatusOK)
	}

	up.Store(true)
	en := expectAPIStatus(t, h.do("POST", "/v1/webhooks/"+whk+"/enable", key, nil), http.StatusOK)
	if en["status"] != "enabled" || en["disabled_at"] != nil {
		t.Fatalf("enable answered %v", en)
	}
	down.waitFor(4)
	eventually(t, func() bool {
		ds := h.deliveriesOf(fsm.EventID(vid))
		return len(ds) == 1 && ds[0].ID == delivery && ds[0].State == fsm.DeliveryDelivered
	}, "the waiting delivery to be delivered after enable")
}

// The endpoint actions answer the contract's errors: another account's
// endpoint is 404, a body with fields is 400, enabling an enabled one
// answers it unchanged.
func TestWebhookActionsHTTP(t *testing.T) {
	h := start(t, withWebhooks(newFakeClock()))
	_, key := h.account("pro", 1000)
	_, otherKey := h.account("pro", 1000)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	whk, _ := h.registerWebhook(key, rc.srv.URL+"/hook")
	for _, action := range []string{"test", "rotate_secret", "enable"} {
		for _, tc := range []struct {
			name   string
			key    string
			id     string
			body   any
			status int
			code   string
		}{
			{"another account's", otherKey, whk, nil, http.StatusNotFound, "not_found"},
			{"unknown id", key, "whk_missing", nil, http.StatusNotFound, "not_found"},
			{"a field", key, whk, map[string]any{"url": "x"}, http.StatusBadRequest, "invalid_request"},
			{"no key", "", whk, nil, http.StatusUnauthorized, "missing_api_key"},
		} {
			t.Run(action+"/"+tc.name, func(t *testing.T) {
				expectAPIError(t, h.do("POST", "/v1/webhooks/"+tc.id+"/"+action, tc.key, tc.body), tc.status, tc.code)
			})
		}
	}
	en := expectAPIStatus(t, h.do("POST", "/v1/webhooks/"+whk+"/enable", key, map[string]any{}), http.StatusOK)
	if en["id"] != whk || en["status"] != "enabled" || en["secret"] != nil {
		t.Fatalf("enable of an enabled endpoint %v", en)
	}
	reg := expectAPIStatus(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": rc.srv.URL + "/b",
		"events": []string{fsm.EventWebhookDisabled}}), http.StatusCreated)
	if reg["status"] != "enabled" || reg["events"].([]any)[0] != fsm.EventWebhookDisabled {
		t.Fatalf("subscription to webhook.disabled %v", reg)
	}
	expectAPIError(t, h.do("POST", "/v1/webhooks", key, map[string]any{"url": rc.srv.URL + "/c",
		"events": []string{fsm.EventWebhookTest}}), http.StatusBadRequest, "invalid_request")
}

// An endpoint disabled for WebhookDisabledKeep loses the deliveries still
// waiting for it: the leader abandons them (they stayed in every member's
// memory for as long as the endpoint existed), and they answer as
// abandoned in the endpoint's delivery list.
func TestDisabledEndpointsDeliveriesAbandoned(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock), func(c *server.Config) {
		c.WebhookDisableAfter = 5 * time.Minute
		c.WebhookDisableCheck = 20 * time.Millisecond
		c.WebhookDisabledKeep = 10 * time.Minute
	})
	_, key := h.account("pro", 1000)
	down := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	whk, _ := h.registerWebhook(key, down.srv.URL+"/hook")
	vid := h.failedVideo(key)
	t0 := failThrice(t, h, clock, down, vid)
	state := func() string {
		page := expectAPIStatus(t, h.do("GET", "/v1/webhooks/"+whk+"/deliveries", key, nil), http.StatusOK)
		return page["data"].([]any)[0].(map[string]any)["status"].(string)
	}
	eventually(t, func() bool { return len(h.srv.Node.FSM.DisabledWaiting(clock.Now().UnixNano())) == 1 }, "the endpoint to be disabled")
	clock.Set(t0.Add(6*time.Minute + 9*time.Minute)) // disabled 9 minutes: kept
	if got := state(); got != fsm.DeliveryPending {
		t.Fatalf("delivery %s nine minutes after the endpoint was disabled, want it still pending", got)
	}
	clock.Set(t0.Add(6*time.Minute + 11*time.Minute))
	eventually(t, func() bool { return state() == fsm.DeliveryAbandoned }, "the waiting delivery to be abandoned")
	if n := h.srv.Node.FSM.PendingDeliveries(); n != 0 {
		t.Fatalf("%d deliveries still pending", n)
	}
}

// failThrice moves the clock through the first three attempts of vid's
// event to down (which fails them: at once, a minute later, five minutes
// after that) and returns the time of the first.
func failThrice(t *testing.T, h *harness, clock *fakeClock, down *receiver, vid string) time.Time {
	t.Helper()
	t0 := clock.Now()
	down.waitFor(1)
	for i, at := range []time.Time{t0.Add(time.Minute), t0.Add(6 * time.Minute)} { // the schedule: +1 min, +5 min
		eventually(t, func() bool { return len(h.deliveriesOf(fsm.EventID(vid))[0].Attempts) == i+1 }, "attempt %d recorded", i+1)
		clock.Set(at)
		down.waitFor(i + 2)
	}
	return t0
}
