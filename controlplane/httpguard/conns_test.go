package httpguard

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// limited serves a trivial handler on a loopback listener limited to limit
// connections per address.
func limited(t *testing.T, limit int, exempt func(netip.Addr) bool) *Listener {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitConns(raw, limit, exempt)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln
}

// get sends one request on a new connection that stays open; the answer
// says whether the connection was served.
func get(t *testing.T, addr string) (net.Conn, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err // a refusal can reset the connection before the dial returns
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		return c, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a broken limit fails, not hangs
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, err
	}
	resp.Body.Close()
	return c, nil
}

// waitFor polls cond until it holds or 10 s have passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConnectionLimitPerAddress(t *testing.T) {
	ln := limited(t, 2, nil)
	addr := ln.Addr().String()
	first, err := get(t, addr)
	if err != nil {
		t.Fatalf("first connection: %v", err)
	}
	if _, err := get(t, addr); err != nil {
		t.Fatalf("second connection: %v", err)
	}
	if n := ln.Open(loopback); n != 2 {
		t.Fatalf("open connections of 127.0.0.1: %d, want 2", n)
	}
	// The third one from the same address, on another port, is refused.
	if _, err := get(t, addr); err == nil {
		t.Fatal("a third connection from one address was served")
	}
	if ln.Refused() != 1 {
		t.Fatalf("Refused() = %d, want 1", ln.Refused())
	}
	// A connection given back makes room for a new one.
	first.Close()
	waitFor(t, "the closed connection to be given back", func() bool { return ln.Open(loopback) == 1 })
	if _, err := get(t, addr); err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	if ln.Refused() != 1 {
		t.Fatalf("Refused() = %d, want 1", ln.Refused())
	}
}

func TestConnectionLimitExempt(t *testing.T) {
	ln := limited(t, 1, func(a netip.Addr) bool { return a.IsLoopback() })
	for i := range 4 {
		if _, err := get(t, ln.Addr().String()); err != nil {
			t.Fatalf("connection %d from an exempt address: %v", i, err)
		}
	}
	if ln.Refused() != 0 || ln.Open(loopback) != 0 {
		t.Fatalf("exempt address counted: refused %d, open %d", ln.Refused(), ln.Open(loopback))
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::",
		"2001:db8:1:2::9":      "2001:db8:1:2::",
		"fe80::1%eth0":         "fe80::",
	} {
		if got := clientKey(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("clientKey(%s) = %s, want %s", in, got, want)
		}
	}
}
