package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSecret = "whsec_bench_test"

// sign is the contract's Service-Signature, computed independently of
// verifySignature's parsing.
func sign(secret string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(fmt.Sprintf("%d.%s", t, body)))
	return fmt.Sprintf("t=%d,v1=%s", t, hex.EncodeToString(m.Sum(nil)))
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"id":"evt_1","type":"video.completed"}`)
	now := time.Unix(1_763_700_000, 0)
	good := sign(testSecret, now.Unix(), body)
	other := sign("whsec_other", now.Unix(), body)
	for _, c := range []struct {
		name, header string
		body         []byte
		at           time.Time
		ok           bool
	}{
		{"valid", good, body, now, true},
		{"4m59s late", good, body, now.Add(4*time.Minute + 59*time.Second), true},
		{"6m late (replay)", good, body, now.Add(6 * time.Minute), false},
		{"6m early", good, body, now.Add(-6 * time.Minute), false},
		{"body changed", good, append(body, ' '), now, false},
		{"wrong secret", other, body, now, false},
		{"rotation: second v1 matches", other + ",v1=" + strings.TrimPrefix(good, fmt.Sprintf("t=%d,v1=", now.Unix())), body, now, true},
		{"no header", "", body, now, false},
		{"no v1", fmt.Sprintf("t=%d", now.Unix()), body, now, false},
		{"bad t", "t=x,v1=" + strings.Repeat("ab", 32), body, now, false},
		{"short v1", fmt.Sprintf("t=%d,v1=abcd", now.Unix()), body, now, false},
	} {
		err := verifySignature(testSecret, c.header, c.body, c.at)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// hookFarm adds the webhook API to loadServer and, when a video is first
// polled completed, delivers to the registered endpoint: every event once;
// vid_1's twice (a retry: duplicate evt_ id); a forged delivery for vid_2;
// an event for a video of another client; and nothing for vid_4.
type hookFarm struct {
	*loadServer
	mu      sync.Mutex
	url     string
	deleted []string
	refuse  bool // answer POST /v1/webhooks with webhook_limit_reached
	sent    map[string]bool
}

func (f *hookFarm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/webhooks":
		var req struct{ URL string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if f.refuse {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"code":"webhook_limit_reached","message":"at most 5 endpoints"}}`)
			return
		}
		f.mu.Lock()
		f.url = req.URL
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"whk_1","url":%q,"secret":%q}`, req.URL, testSecret)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/webhooks/"):
		f.mu.Lock()
		f.deleted = append(f.deleted, strings.TrimPrefix(r.URL.Path, "/v1/webhooks/"))
		f.mu.Unlock()
		fmt.Fprint(w, `{"id":"whk_1","object":"webhook_endpoint","deleted":true}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/videos/"):
		rec := httptest.NewRecorder()
		f.loadServer.ServeHTTP(rec, r)
		id := strings.TrimPrefix(r.URL.Path, "/v1/videos/")
		if bytes.Contains(rec.Body.Bytes(), []byte(`"completed"`)) {
			f.completed(id)
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	default:
		f.loadServer.ServeHTTP(w, r)
	}
}

func (f *hookFarm) completed(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent[id] || id == "vid_4" {
		return
	}
	f.sent[id] = true
	send := []struct{ evt, vid, secret string }{{"evt_" + id, id, testSecret}}
	switch id {
	case "vid_1":
		send = append(send, send[0], struct{ evt, vid, secret string }{"evt_other", "vid_elsewhere", testSecret})
	case "vid_2":
		send = append(send, struct{ evt, vid, secret string }{"evt_forged", id, "whsec_wrong"})
	}
	// Delivered before the poll that saw completed is answered, as a fast
	// farm may: the receiver must not depend on the order.
	for _, d := range send {
		body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"video.completed","data":{"video":{"id":%q,"status":"completed"}}}`, d.evt, d.vid)
		req, _ := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
		req.Header.Set(signatureHeader, sign(d.secret, time.Now().Unix(), body))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}
}

func TestRunLoadWebhookReceiver(t *testing.T) {
	f := &hookFarm{loadServer: &loadServer{release: make(chan struct{}), polls: map[string]int{}}, sent: map[string]bool{}}
	close(f.release)
	srv := httptest.NewServer(f)
	defer srv.Close()
	// 6 creates: vid_3 and vid_6 refused (rate_limited), vid_1, 2, 4, 5 accepted.
	var last LoadProgress
	rep, err := RunLoad(context.Background(), LoadConfig{
		BaseURL: srv.URL, APIKeys: []string{"k", "k"}, Rate: 20, Duration: 300 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, Drain: 2 * time.Second, WebhookListen: "127.0.0.1:0",
		Progress: func(p LoadProgress) { last = p },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	w := rep.Webhooks
	if rep.Accepted != 4 || rep.Outcomes["completed"] != 4 || w == nil {
		t.Fatalf("accepted %d, outcomes %v, webhooks %v", rep.Accepted, rep.Outcomes, w)
	}
	// 3 own events once + 1 retry + 1 forged + 1 foreign.
	if w.Deliveries != 6 || w.Duplicates != 1 || w.BadSignatures != 1 || w.Foreign != 1 || w.Events["video.completed"] != 4 {
		t.Fatalf("webhooks %+v", w)
	}
	if w.TimeToWebhook.Count != 3 || w.NotDelivered["video.completed"] != 1 || len(w.NotDelivered) != 1 {
		t.Fatalf("time to webhook %+v, not delivered %v; want 3 timed, vid_4 missing", w.TimeToWebhook, w.NotDelivered)
	}
	if last.AwaitingWebhooks != 1 {
		t.Errorf("last progress %+v: vid_4's event is still awaited", last)
	}
	if !strings.HasPrefix(f.url, "http://127.0.0.1:") || !strings.HasSuffix(f.url, "/hooks/0") {
		t.Errorf("registered %q", f.url)
	}
	if len(f.deleted) != 1 || f.deleted[0] != "whk_1" {
		t.Errorf("deleted %v, want the one endpoint (one distinct key)", f.deleted)
	}
	if !strings.Contains(rep.String(), "time to webhook, s") || !strings.Contains(rep.String(), "polled but not delivered 1 x video.completed") {
		t.Errorf("report text:\n%s", rep)
	}
}

func TestRunLoadWebhookRegistrationRefused(t *testing.T) {
	f := &hookFarm{loadServer: &loadServer{release: make(chan struct{}), polls: map[string]int{}}, sent: map[string]bool{}, refuse: true}
	close(f.release)
	srv := httptest.NewServer(f)
	defer srv.Close()
	_, err := RunLoad(context.Background(), LoadConfig{
		BaseURL: srv.URL, APIKeys: []string{"k"}, Rate: 10, Duration: time.Second, WebhookListen: "127.0.0.1:0",
	})
	if err == nil || !strings.Contains(err.Error(), "webhook_limit_reached") {
		t.Fatalf("err %v, want the refusal's code", err)
	}
	if n := f.creates.Load(); n != 0 {
		t.Fatalf("%d creates sent after the receiver could not be registered", n)
	}
}

func TestRunLoadWebhookConfig(t *testing.T) {
	base := LoadConfig{BaseURL: "http://127.0.0.1:1", APIKeys: []string{"k"}, Rate: 1, Duration: time.Second}
	for name, c := range map[string]struct{ listen, url string }{
		"url without listen": {"", "http://10.0.0.5:9000"},
		"relative url":       {"127.0.0.1:0", "/hooks"},
		"ftp url":            {"127.0.0.1:0", "ftp://h/x"},
		"bad listen":         {"127.0.0.1:notaport", ""},
	} {
		cfg := base
		cfg.WebhookListen, cfg.WebhookURL = c.listen, c.url
		if _, err := RunLoad(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The receiver's answers: only a verified event to a registered endpoint
// gets 2xx, whatever path prefix a proxy in front of it keeps.
func TestHookReceiverAnswers(t *testing.T) {
	h := &hookReceiver{
		run: &loadRun{rec: newLoadRecorder()}, changed: make(chan struct{}, 1), events: map[string]int{},
		arrived: map[string]map[string]time.Time{}, videos: map[string]time.Time{}, final: map[string]string{},
		eps: []*hookEndpoint{{id: "whk_1", secret: testSecret, seen: map[string]bool{}}},
	}
	body := []byte(`{"id":"evt_1","type":"video.completed","data":{"video":{"id":"vid_1"}}}`)
	for _, c := range []struct {
		name, method, path, secret string
		body                       []byte
		want                       int
	}{
		{"verified", http.MethodPost, "/hooks/0", testSecret, body, http.StatusNoContent},
		{"through a path prefix, a retry", http.MethodPost, "/tunnel/hooks/0", testSecret, body, http.StatusNoContent},
		{"wrong secret", http.MethodPost, "/hooks/0", "whsec_x", body, http.StatusUnauthorized},
		{"not an event", http.MethodPost, "/hooks/0", testSecret, []byte(`[1]`), http.StatusBadRequest},
		{"unknown endpoint", http.MethodPost, "/hooks/1", testSecret, body, http.StatusBadRequest},
		{"not a hook path", http.MethodPost, "/", testSecret, body, http.StatusNotFound},
		{"GET", http.MethodGet, "/hooks/0", testSecret, body, http.StatusNotFound},
	} {
		req := httptest.NewRequest(c.method, c.path, bytes.NewReader(c.body))
		req.Header.Set(signatureHeader, sign(c.secret, time.Now().Unix(), c.body))
		rec := httptest.NewRecorder()
		h.serve(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, rec.Code, c.want, rec.Body)
		}
	}
	if h.deliveries != 5 || h.dups != 1 || h.bad != 3 || h.events["video.completed"] != 1 {
		t.Errorf("deliveries %d, duplicates %d, bad %d, events %v", h.deliveries, h.dups, h.bad, h.events)
	}
}
