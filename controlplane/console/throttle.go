package console

import (
	"net"
	"sync"
	"time"
)

// Refused logins are throttled per client address: MaxLoginFailures in a
// LoginWindow, then every login from that address (the right token too)
// is refused until the window ends, so the admin token cannot be guessed
// at the speed of the network.
const (
	MaxLoginFailures = 10
	LoginWindow      = time.Minute
	// maxThrottled bounds the addresses remembered; past it, windows that
	// have ended are forgotten first.
	maxThrottled = 10_000
)

type failures struct {
	since time.Time
	n     int
}

type throttle struct {
	mu  sync.Mutex
	by  map[string]*failures
	now func() time.Time
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{by: map[string]*failures{}, now: now}
}

// clientOf is the address a request's connection comes from (its host).
func clientOf(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// blocked says how long logins from addr stay refused (0: not refused).
func (t *throttle) blocked(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.by[addr]
	if !ok {
		return 0
	}
	left := LoginWindow - t.now().Sub(f.since)
	if left <= 0 {
		delete(t.by, addr)
		return 0
	}
	if f.n < MaxLoginFailures {
		return 0
	}
	return left
}

// fail counts a refused login from addr.
func (t *throttle) fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f, ok := t.by[addr]
	if !ok || now.Sub(f.since) >= LoginWindow {
		if len(t.by) >= maxThrottled {
			for k, v := range t.by {
				if now.Sub(v.since) >= LoginWindow {
					delete(t.by, k)
				}
			}
		}
		if len(t.by) >= maxThrottled {
			return // a flood from that many addresses: the window of each still holds
		}
		f = &failures{since: now}
		t.by[addr] = f
	}
	f.n++
}
