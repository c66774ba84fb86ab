package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// TestWebhooksPageEndpoints checks over real HTTP that the webhooks page
// lists the customers' endpoints that fail (enabled, with the run of
// failures) or were disabled by the leader after failing long enough, each
// with its last attempts, and leaves out a healthy one; a session is
// required.
func TestWebhooksPageEndpoints(t *testing.T) {
	f := startFarm(t, func(c *server.Config) {
		c.DevAllowPrivateWebhooks = true
		c.WebhookDisableAfter, c.WebhookDisableCheck = time.Nanosecond, 100*time.Millisecond
	})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer up.Close()

	endpoint := func(url string, tests int) (account, id string) {
		a, err := f.admin.CreateAccount(context.Background(), "hooks", "pro", 1000)
		must(t, err, "create account")
		var w struct {
			ID string `json:"id"`
		}
		f.call("POST", f.srv.PublicURL(), "/v1/webhooks", a.APIKey, map[string]any{"url": url}, &w)
		for range tests {
			f.call("POST", f.srv.PublicURL(), "/v1/webhooks/"+w.ID+"/test", a.APIKey, nil, nil)
		}
		return a.AccountID, w.ID
	}
	_, disabled := endpoint(down.URL+"/a", 2) // fails over more than WebhookDisableAfter: disabled
	failingAcct, failing := endpoint(down.URL+"/b", 1)
	_, healthy := endpoint(up.URL+"/c", 1)

	base := "http://" + f.srv.AdminAddr()
	if st, body, _ := send(t, "GET", base+"/console/api/webhooks", "", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("webhooks without a session: %d %s", st, body)
	}
	ck, _ := loginCookie(t, base)
	_, ch := stream(t, base+"/console/api/events?page=webhooks", ck)
	var page console.WebhooksJSON
	deadline := time.Now().Add(15 * time.Second)
	for {
		data := next(t, ch, "snapshot", time.Until(deadline), func(string) bool { return true })
		must(t, json.Unmarshal([]byte(data), &page), "webhooks snapshot")
		byID := map[string]console.EndpointJSON{}
		for _, e := range page.Endpoints {
			byID[e.ID] = e
		}
		d, dok := byID[disabled]
		fl, fok := byID[failing]
		if dok && fok && d.Status == "disabled" && len(fl.Recent) == 1 && fl.Recent[0].Last != nil {
			if _, ok := byID[healthy]; ok || page.EndpointsTotal != 2 {
				t.Fatalf("the healthy endpoint is listed, or the total is %d: %+v", page.EndpointsTotal, page.Endpoints)
			}
			if d.DisabledAt == nil || d.FailingSince == nil || len(d.Recent) != 2 {
				t.Errorf("disabled endpoint %+v: want disabled_at, failing_since and its 2 deliveries", d)
			}
			last := fl.Recent[0]
			if fl.Status != "enabled" || fl.AccountID != failingAcct || fl.FailingSince == nil || fl.LastFailedAt == nil ||
				last.Last.Status != http.StatusServiceUnavailable || last.EventType != "webhook.test" || last.Attempts != 1 {
				t.Errorf("failing endpoint %+v, last %+v %+v: want enabled, failing since, 503 to webhook.test", fl, last, *last.Last)
			}
			return
		}
	}
}
