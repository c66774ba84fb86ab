package console

import (
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
