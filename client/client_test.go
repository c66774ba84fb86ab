package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// newTestClient returns a client of srv that retries at once, so tests do not
// wait on backoff.
func newTestClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, fakeKey, append([]client.Option{client.WithBackoff(time.Millisecond, time.Millisecond),
		client.WithPollInterval(time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreateRetries(t *testing.T) {
	cases := []struct {
		name     string
		faults   []fault
		attempts int    // requests the create makes
		videos   int    // videos the server holds afterwards
		code     string // the error's code; "" for success
	}{
		{"answer lost once", []fault{{drop: true}}, 2, 1, ""},
		{"answer lost twice", []fault{{drop: true}, {drop: true}}, 3, 1, ""},
		{"503 then success", []fault{{status: 503, code: "internal_error", retryable: true}}, 2, 1, ""},
		{"429 with Retry-After", []fault{{status: 429, code: "rate_limited", retryable: true, retryAfter: "0"}}, 2, 1, ""},
		{"in flight is retryable", []fault{{status: 409, code: "idempotency_in_flight", retryable: true}}, 2, 1, ""},
		{"400 is not retried", []fault{{status: 400, code: "invalid_request"}}, 1, 0, "invalid_request"},
		{"402 is not retried", []fault{{status: 402, code: "insufficient_credits"}}, 1, 0, "insufficient_credits"},
		{"attempts are bounded", []fault{{status: 502, code: "upstream_error", retryable: true}, {status: 502, code: "upstream_error", retryable: true},
			{status: 502, code: "upstream_error", retryable: true}}, 3, 0, "upstream_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t)
			f.addFaults(tc.faults...)
			c := newTestClient(t, srv.URL, client.WithMaxAttempts(3))
			v, err := c.CreateAuto(context.Background(), client.AutoVideoRequest{Prompt: "a lantern", DurationSeconds: 15})
			if tc.code == "" && err != nil {
				t.Fatalf("create: %v", err)
			}
			if tc.code != "" && !client.IsCode(err, tc.code) {
				t.Fatalf("create: got %v, want code %s", err, tc.code)
			}
			if tc.code == "" && (v.Status != client.StatusQueued || v.Mode != "auto") {
				t.Errorf("video %+v, want a queued auto video", v)
			}
			reqs := f.seen()
			if len(reqs) != tc.attempts {
				t.Errorf("%d requests, want %d", len(reqs), tc.attempts)
			}
			for _, r := range reqs {
				if r.idemKey == "" || r.idemKey != reqs[0].idemKey {
					t.Errorf("attempt with Idempotency-Key %q, first had %q: retries must reuse one key", r.idemKey, reqs[0].idemKey)
				}
			}
			if n := f.count(); n != tc.videos {
				t.Errorf("%d videos created, want %d", n, tc.videos)
			}
		})
	}
}

func TestCallerIdempotencyKey(t *testing.T) {
	f, srv := newFake(t)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	req := client.AutoVideoRequest{Prompt: "a lantern"}
	a, err := c.CreateAuto(ctx, req, client.WithIdempotencyKey("order-42"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateAuto(ctx, req, client.WithIdempotencyKey("order-42"))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || f.count() != 1 {
		t.Errorf("two creates with one key gave %s and %s (%d videos), want one video", a.ID, b.ID, f.count())
	}
	if a.Replayed || !b.Replayed {
		t.Errorf("Replayed: first create %v, second %v; want false, then true", a.Replayed, b.Replayed)
	}
	if k := f.seen()[0].idemKey; k != "order-42" {
		t.Errorf("sent key %q, want the caller's", k)
	}
	_, err = c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "another"}, client.WithIdempotencyKey("order-42"))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 409 || e.Code != "duplicate_request" || e.Details["existing_video_id"] != a.ID || e.RequestID != "req_fake" {
		t.Errorf("reused key with another body: %#v, want 409 duplicate_request naming %s", err, a.ID)
	}
	if e != nil && e.Retryable {
		t.Error("duplicate_request must not be retryable")
	}
}

func TestErrorAnswers(t *testing.T) {
	_, srv := newFake(t)
	c, err := client.New(srv.URL, "vf_wrong")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != "invalid_api_key" {
		t.Fatalf("wrong key: %v, want 401 invalid_api_key", err)
	}
	good := newTestClient(t, srv.URL)
	if _, err := good.GetVideo(context.Background(), "vid_nope"); !client.IsCode(err, "not_found") {
		t.Errorf("unknown video: %v, want not_found", err)
	}
	withV1 := newTestClient(t, srv.URL+"/v1/")
	if me, err := withV1.Me(context.Background()); err != nil || me.ID != "acct_fake" {
		t.Errorf("base URL ending in /v1: %v, want the account", err)
	}
	if _, err := client.New("ftp://x", fakeKey); err == nil {
		t.Error("an ftp base URL was accepted")
	}
	if _, err := client.New(srv.URL, ""); err == nil {
		t.Error("an empty API key was accepted")
	}
}

func TestNonEnvelopeError(t *testing.T) {
	srv := newRawServer(t, http.StatusBadGateway, "<html>bad gateway</html>")
	c := newTestClient(t, srv.URL, client.WithMaxAttempts(2))
	_, err := c.Me(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "http_502" || !e.Retryable {
		t.Fatalf("proxy page: %v, want a retryable http_502", err)
	}
}

func TestCancel(t *testing.T) {
	f, srv := newFake(t)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "a lantern", DurationSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call shows cancel is idempotent
		got, err := c.CancelVideo(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != client.StatusCanceled || got.Cancellation == nil || got.Cancellation.CreditsRefunded != v.CreditsCharged {
			t.Fatalf("canceled video %+v, want canceled with %d refunded", got, v.CreditsCharged)
		}
	}
	if me, _ := c.Me(ctx); me.Credits != 1000 {
		t.Errorf("balance %d after cancel, want the full 1000 back", me.Credits)
	}
	done, _ := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "done"})
	if _, err := c.Wait(ctx, done.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelVideo(ctx, done.ID); !client.IsCode(err, client.CodeVideoNotCancelable) {
		t.Errorf("cancel a completed video: %v, want video_not_cancelable", err)
	}
	if n := f.count(); n != 2 {
		t.Errorf("%d videos, want 2", n)
	}
}

func TestWaitReportsEveryChange(t *testing.T) {
	_, srv := newFake(t)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	v, err := c.CreateManual(ctx, client.ManualVideoRequest{Prompt: "a fox"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	final, err := c.Wait(ctx, v.ID, func(v client.Video) {
		s := v.Status
		if v.Progress != nil {
			s += "/" + v.Progress.Stage
		}
		seen = append(seen, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"processing/rendering", "completed"}
	if !slices.Equal(seen, want) || final.VideoURL == "" {
		t.Errorf("saw %v (final %+v), want %v and a video URL", seen, final, want)
	}
}

func TestWaitStopsWithContext(t *testing.T) {
	_, srv := newFake(t)
	c, err := client.New(srv.URL, fakeKey) // polls at the video's 5 s
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Wait(ctx, v.ID, func(client.Video) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel: %v, want context.Canceled", err)
	}
}

func TestVideosIterator(t *testing.T) {
	f, srv := newFake(t)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	var created []string
	for range 45 {
		v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "p"})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, v.ID)
	}
	slices.Reverse(created) // the list is newest first
	before := len(f.seen())
	var got []string
	for v, err := range c.Videos(ctx, client.ListVideosParams{Limit: 20}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.ID)
	}
	if !slices.Equal(got, created) {
		t.Errorf("iterated %v, want %v", got, created)
	}
	if pages := len(f.seen()) - before; pages != 3 {
		t.Errorf("%d page requests for 45 videos at 20 a page, want 3", pages)
	}
	for _, err := range c.Videos(ctx, client.ListVideosParams{Limit: 500}) {
		if !client.IsCode(err, "invalid_request") {
			t.Errorf("limit 500: %v, want invalid_request", err)
		}
	}
}

func TestVerifyWebhook(t *testing.T) {
	const secret = "whsec_test"
	body := []byte(`{"id":"evt_1","object":"event","type":"video.completed"}`)
	at := time.Unix(1763700000, 0)
	h := signature.Header(secret, at, body)
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", h, body, at, nil},
		{"body changed", h, append([]byte(" "), body...), at, client.ErrSignatureMismatch},
		{"replayed later", h, body, at.Add(time.Hour), client.ErrSignatureExpired},
		{"no header", "", body, at, client.ErrSignatureMissing},
		{"garbage", "nonsense", body, at, client.ErrSignatureMalformed},
	}
	for _, tc := range cases {
		if err := client.VerifyWebhook(secret, tc.header, tc.body, tc.now, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestVerifyWebhookRequest(t *testing.T) {
	const secret = "whsec_test"
	body := `{"id":"evt_1","object":"event","type":"video.completed","created":1,"data":{"video":{"id":"vid_1"}}}`
	for _, tc := range []struct {
		name   string
		header string
		want   error
	}{
		{"signed now", signature.Header(secret, time.Now(), []byte(body)), nil},
		{"other secret", signature.Header("whsec_other", time.Now(), []byte(body)), client.ErrSignatureMismatch},
		{"unsigned", "", client.ErrSignatureMissing},
	} {
		r := httptest.NewRequest("POST", "/hooks", strings.NewReader(body))
		if tc.header != "" {
			r.Header.Set(client.SignatureHeader, tc.header)
		}
		got, err := client.VerifyWebhookRequest(r, secret)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && string(got) != body {
			t.Errorf("%s: body %q, want the request's", tc.name, got)
		}
		if tc.want != nil && got != nil {
			t.Errorf("%s: an unverified body was returned", tc.name)
		}
	}
}
