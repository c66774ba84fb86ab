package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
)

// hookReceiver is a real receiver on loopback that records every delivery
// and acknowledges it.
type hookReceiver struct {
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	header string
	body   []byte
	event  client.Event
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var ev client.Event
	_ = json.Unmarshal(b, &ev)
	rc.mu.Lock()
	rc.got = append(rc.got, hookRequest{header: r.Header.Get(client.SignatureHeader), body: b, event: ev})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *hookReceiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookRequest(nil), rc.got...)
}

// `vidfarm webhook` through the SDK against `vidfarm dev`: list, test (the
// receiver gets a signed webhook.test), rotate (the next delivery verifies
// with the old secret and with the new one, each alone), deliveries, retry,
// enable.
func TestWebhookCLIAgainstDev(t *testing.T) {
	f := startDevFarm(t, 0, "--dev-allow-private-webhooks")
	rc := &hookReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)

	body, _ := json.Marshal(map[string]any{"url": srv.URL + "/hook"})
	req, _ := http.NewRequest("POST", f.public+"/v1/webhooks", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.apiKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var hook client.WebhookEndpoint
	err = json.NewDecoder(res.Body).Decode(&hook)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated || hook.Secret == "" {
		t.Fatalf("register: %d %+v (%v)", res.StatusCode, hook, err)
	}
	oldSecret := hook.Secret

	env := []string{"VIDFARM_URL=" + f.public, "VIDFARM_API_KEY=" + f.apiKey}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(vidfarmBinary(t), append([]string{"webhook"}, args...)...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("vidfarm webhook %s: %v\nstderr: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	waitRequests := func(n int) []hookRequest {
		t.Helper()
		eventually(t, 30*time.Second, "the receiver to get a delivery", func() bool { return len(rc.requests()) >= n })
		return rc.requests()
	}

	if out := run("list"); !strings.Contains(out, hook.ID+"  enabled ") {
		t.Fatalf("list printed %q, want the endpoint enabled", out)
	}
	var d client.WebhookDelivery
	if err := json.Unmarshal([]byte(run("test", hook.ID, "--json")), &d); err != nil || d.EventType != client.EventWebhookTest {
		t.Fatalf("test --json: %+v (%v)", d, err)
	}
	got := waitRequests(1)
	if err := client.VerifyWebhook(oldSecret, got[0].header, got[0].body, time.Now(), 0); err != nil {
		t.Fatalf("test event signature: %v", err)
	}
	if got[0].event.Type != client.EventWebhookTest || got[0].event.Data.Webhook == nil || got[0].event.Data.Webhook.ID != hook.ID {
		t.Fatalf("test event %s", got[0].body)
	}

	newSecret := strings.TrimSpace(run("rotate", hook.ID))
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == oldSecret {
		t.Fatalf("rotate printed %q, want a new secret", newSecret)
	}
	run("test", hook.ID)
	got = waitRequests(2)
	if n := strings.Count(got[1].header, "v1="); n != 2 {
		t.Fatalf("after a rotation the header %q has %d signatures, want 2", got[1].header, n)
	}
	for _, s := range []string{oldSecret, newSecret} {
		if err := client.VerifyWebhook(s, got[1].header, got[1].body, time.Now(), 0); err != nil {
			t.Fatalf("during the overlap %s…: %v", s[:10], err)
		}
	}
	if err := client.VerifyWebhook("whsec_wrong", got[1].header, got[1].body, time.Now(), 0); !errors.Is(err, client.ErrSignatureMismatch) {
		t.Fatalf("a wrong secret: %v, want a mismatch", err)
	}

	var page client.DeliveryList
	eventually(t, 30*time.Second, "both test deliveries to be delivered", func() bool {
		page = client.DeliveryList{}
		if err := json.Unmarshal([]byte(run("deliveries", hook.ID, "--json")), &page); err != nil {
			t.Fatal(err)
		}
		return len(page.Data) == 2 && page.Data[0].Status == "delivered" && page.Data[1].Status == "delivered"
	})
	if out := run("deliveries", hook.ID); strings.Count(out, "delivered  webhook.test") != 2 || !strings.Contains(out, " 204, ") {
		t.Fatalf("deliveries printed %q", out)
	}
	if err := json.Unmarshal([]byte(run("retry", hook.ID, page.Data[1].ID, "--json")), &d); err != nil || d.Status != "pending" || d.ID != page.Data[1].ID {
		t.Fatalf("retry --json: %+v (%v)", d, err)
	}
	got = waitRequests(3)
	if got[2].event.ID != got[0].event.ID {
		t.Fatalf("the retry sent event %s, want %s again", got[2].event.ID, got[0].event.ID)
	}
	if out := run("enable", hook.ID); !strings.Contains(out, hook.ID+"  enabled ") {
		t.Fatalf("enable printed %q", out)
	}
}
