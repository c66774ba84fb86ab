package client

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	c := &Client{minBackoff: 100 * time.Millisecond, maxBackoff: time.Second}
	cases := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 0, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 0, 500 * time.Millisecond, time.Second}, // capped
		{80, 0, 500 * time.Millisecond, time.Second}, // no overflow
		{1, 7 * time.Second, 7 * time.Second, 7 * time.Second},
	}
	for _, tc := range cases {
		for range 50 {
			if d := c.backoff(tc.attempt, tc.retryAfter); d < tc.lo || d > tc.hi {
				t.Fatalf("backoff(%d, %v) = %v, want in [%v, %v]", tc.attempt, tc.retryAfter, d, tc.lo, tc.hi)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		in     string
		lo, hi time.Duration
	}{
		{"", 0, 0},
		{"3", 3 * time.Second, 3 * time.Second},
		{"-1", 0, 0},
		{"soon", 0, 0},
		{future, 59 * time.Minute, time.Hour},
		{"Mon, 02 Jan 2006 15:04:05 GMT", 0, 0}, // in the past
	}
	for _, tc := range cases {
		if d := parseRetryAfter(tc.in); d < tc.lo || d > tc.hi {
			t.Errorf("parseRetryAfter(%q) = %v, want in [%v, %v]", tc.in, d, tc.lo, tc.hi)
		}
	}
}

func TestRetryAfterFromBody(t *testing.T) {
	e := parseError(429, []byte(`{"error":{"code":"rate_limited","message":"slow down","retryable":true,"request_id":"req_1","retry_after_seconds":12}}`), 0, "")
	if e.RetryAfter != 12*time.Second || !e.Retryable || e.RequestID != "req_1" {
		t.Errorf("parsed %+v, want retry after 12s, retryable, req_1", e)
	}
	e = parseError(429, []byte(`{"error":{"code":"rate_limited","message":"m","retryable":true,"request_id":"req_1","retry_after_seconds":12}}`), 3*time.Second, "")
	if e.RetryAfter != 3*time.Second {
		t.Errorf("header Retry-After 3s lost to the body's 12: %v", e.RetryAfter)
	}
}
