package console

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSessionExpiry moves a fake clock past the idle and the absolute limit
// of a session, and past MaxSessions.
func TestSessionExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessions(3*time.Hour, time.Hour, func() time.Time { return now })

	idle, _ := s.create()
	now = now.Add(59 * time.Minute)
	if _, ok := s.get(idle); !ok {
		t.Fatal("a session used within the idle limit ended")
	}
	now = now.Add(time.Hour)
	if _, ok := s.get(idle); ok {
		t.Fatal("a session idle for an hour still works")
	}

	busy, _ := s.create()
	for i := range 4 { // used every 40 minutes: never idle
		now = now.Add(40 * time.Minute)
		if _, ok := s.get(busy); !ok {
			t.Fatalf("a session in use ended after %d min", 40*(i+1))
		}
	}
	now = now.Add(40 * time.Minute) // 200 min old
	if _, ok := s.get(busy); ok {
		t.Fatal("a session past its absolute lifetime still works")
	}

	first, _ := s.create()
	for range MaxSessions {
		now = now.Add(time.Millisecond)
		s.create()
	}
	if _, ok := s.get(first); ok || len(s.m) != MaxSessions {
		t.Fatalf("the oldest session outlived MaxSessions (%d kept)", len(s.m))
	}
}

// TestLoginThrottle refuses every login from an address after
// MaxLoginFailures wrong ones within LoginWindow, the right token too, and
// lets it in again once the window has passed; other addresses are not held.
func TestLoginThrottle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(Config{Token: "right", Admin: http.NotFoundHandler(), Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	login := func(addr, token string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/console/login", strings.NewReader(`{"token": "`+token+`"}`))
		req.RemoteAddr = addr
		c.ServeHTTP(rec, req)
		return rec.Code
	}
	for i := range MaxLoginFailures {
		if st := login("192.0.2.1:1000", "wrong"); st != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: %d", i+1, st)
		}
		now = now.Add(time.Second)
	}
	if st := login("192.0.2.1:2000", "right"); st != http.StatusTooManyRequests {
		t.Fatalf("the right token after %d wrong ones: %d, want 429", MaxLoginFailures, st)
	}
	if st := login("192.0.2.2:1000", "right"); st != http.StatusOK {
		t.Fatalf("another address: %d", st)
	}
	now = now.Add(LoginWindow)
	if st := login("192.0.2.1:3000", "right"); st != http.StatusOK {
		t.Fatalf("after the window: %d", st)
	}
}
