package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDNS is the DNS boundary: names map to the addresses a test needs, and a
// name may answer differently on later lookups (rebinding).
type fakeDNS struct {
	answers map[string][][]netip.Addr
	calls   map[string]*atomic.Int32
}

func newFakeDNS() *fakeDNS {
	return &fakeDNS{answers: map[string][][]netip.Addr{}, calls: map[string]*atomic.Int32{}}
}

func (f *fakeDNS) set(name string, answers ...[]netip.Addr) {
	f.answers[name] = answers
	f.calls[name] = &atomic.Int32{}
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := f.answers[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	n := int(f.calls[host].Add(1)) - 1
	return a[min(n, len(a)-1)], nil
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func TestCheckURLRefusesEverySpelling(t *testing.T) {
	dns := newFakeDNS()
	dns.set("hooks.example.com", addrs("93.184.216.34"))
	dns.set("v6.example.com", addrs("2606:2800:220:1:248:1893:25c8:1946"))
	dns.set("internal.example.com", addrs("10.1.2.3"))
	dns.set("mixed.example.com", addrs("93.184.216.34", "192.168.1.1"))
	dns.set("meta.example.com", addrs("169.254.169.254"))
	dns.set("v6private.example.com", addrs("fd12::1"))
	g := &Guard{Resolver: dns}
	ok := []string{
		"https://hooks.example.com/hook",
		"https://hooks.example.com:8443/x?y=1",
		"https://v6.example.com/",
		"https://93.184.216.34/hook",
		"https://[2606:2800:220:1:248:1893:25c8:1946]/hook",
	}
	for _, raw := range ok {
		if _, err := g.CheckURL(context.Background(), raw); err != nil {
			t.Errorf("CheckURL(%q) = %v, want allowed", raw, err)
		}
	}
	refused := map[string]string{
		"http://hooks.example.com/":                "https",
		"ftp://hooks.example.com/":                 "https",
		"https://user:pw@hooks.example.com/":       "credentials",
		"https:///nohost":                          "no host",
		"https://127.0.0.1/":                       "loopback",
		"https://127.0.0.1.:443/":                  "loopback",
		"https://2130706433/":                      "unusual spelling",
		"https://0177.0.0.1/":                      "unusual spelling",
		"https://0x7f.0.0.1/":                      "unusual spelling",
		"https://0x7f000001/":                      "unusual spelling",
		"https://127.1/":                           "unusual spelling",
		"https://017700000001/":                    "unusual spelling",
		"https://10.0.0.1/":                        "private",
		"https://172.16.5.4/":                      "private",
		"https://192.168.0.1/":                     "private",
		"https://100.64.0.1/":                      "carrier-grade",
		"https://169.254.169.254/latest/meta-data": "link-local",
		"https://0.0.0.0/":                         "unspecified",
		"https://[::1]/":                           "loopback",
		"https://[::]/":                            "unspecified",
		"https://[::ffff:127.0.0.1]/":              "loopback",
		"https://[::ffff:7f00:1]/":                 "loopback",
		"https://[::ffff:169.254.169.254]/":        "link-local",
		"https://[fe80::1%25eth0]/":                "zone",
		"https://[fe80::1]/":                       "link-local",
		"https://[fd00:ec2::254]/":                 "unique-local",
		"https://[fc00::1]/":                       "unique-local",
		"https://[64:ff9b::a00:1]/":                "NAT64",
		"https://[2002:7f00:1::]/":                 "6to4",
		"https://[ff02::1]/":                       "multicast",
		"https://224.0.0.1/":                       "multicast",
		"https://255.255.255.255/":                 "broadcast",
		"https://localhost/":                       "this machine",
		"https://LOCALHOST./":                      "this machine",
		"https://metadata.google.internal/":        "this machine",
		"https://api.localhost/":                   "private domain",
		"https://printer.local/":                   "private domain",
		"https://internal.example.com/":            "resolves to 10.1.2.3",
		"https://mixed.example.com/":               "192.168.1.1",
		"https://meta.example.com/":                "link-local",
		"https://v6private.example.com/":           "unique-local",
		"https://nxdomain.example.com/":            "does not resolve",
	}
	for raw, want := range refused {
		_, err := g.CheckURL(context.Background(), raw)
		var re *RefusedError
		if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
			t.Errorf("CheckURL(%q) = %v, want a refusal", raw, err)
			continue
		}
		if !strings.Contains(re.Reason, want) {
			t.Errorf("CheckURL(%q) reason %q, want it to mention %q", raw, re.Reason, want)
		}
	}
}

func TestAllowPrivateLetsTestReceiversThrough(t *testing.T) {
	g := &Guard{AllowPrivate: true}
	for _, raw := range []string{"http://127.0.0.1:8080/hook", "https://localhost/x", "http://10.0.0.1/"} {
		if _, err := g.CheckURL(context.Background(), raw); err != nil {
			t.Errorf("AllowPrivate: CheckURL(%q) = %v", raw, err)
		}
	}
	if _, err := g.CheckURL(context.Background(), "ftp://127.0.0.1/"); err == nil {
		t.Error("AllowPrivate still refuses schemes other than http and https")
	}
}

// tlsGuard returns a guard that trusts srv's certificate and lets exactly srv's
// loopback address through, as if it were a public host.
func tlsGuard(t *testing.T, srv *httptest.Server, dns *fakeDNS) *Guard {
	t.Helper()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "https://"))
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	return &Guard{Resolver: dns, allowAddr: ap, tlsConfig: cfg}
}

func TestDialRechecksAfterRebinding(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	dns := newFakeDNS()
	// Public when registered, the loopback (not the allowed test address) at connect.
	dns.set("rebind.example.com", addrs("93.184.216.34"), addrs("127.0.0.2"))
	g := tlsGuard(t, srv, dns)
	raw := "https://rebind.example.com:" + port + "/hook"
	if _, err := g.CheckURL(context.Background(), raw); err != nil {
		t.Fatalf("registration: %v", err)
	}
	_, err := g.Client(5*time.Second, false).Get(raw)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("connect after rebinding = %v, want ErrRefused", err)
	}
}

func TestRedirectToPrivateIsNeverFollowed(t *testing.T) {
	hits := atomic.Int32{}
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer private.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	defer srv.Close()
	g := tlsGuard(t, srv, newFakeDNS())
	privateURL := strings.Replace(private.URL, "http://", "https://", 1)
	start := srv.URL + "/?to=" + url.QueryEscape(privateURL)

	resp, err := g.Client(5*time.Second, false).Get(start)
	if err != nil {
		t.Fatalf("without redirects: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("without redirects: status %d, want the 302 itself", resp.StatusCode)
	}
	if _, err := g.Client(5*time.Second, true).Get(start); !errors.Is(err, ErrRefused) {
		t.Fatalf("redirect to %s = %v, want ErrRefused", privateURL, err)
	}
	if _, err := g.Client(5*time.Second, true).Get(srv.URL + "/?to=" + url.QueryEscape("http://example.com/")); err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("redirect to plain http = %v, want refused for its scheme", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the private server was reached %d times", hits.Load())
	}
}

func TestFetchLimitsSize(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
			return
		case "/moved":
			http.Redirect(w, r, "/en/home", http.StatusFound)
			return
		}
		// No Content-Length for /stream: the limit must hold while reading.
		if r.URL.Path == "/stream" {
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
	}))
	defer srv.Close()
	g := tlsGuard(t, srv, newFakeDNS())
	page, err := g.Fetch(context.Background(), srv.URL+"/page", 4096, 5*time.Second)
	if err != nil || len(page.Body) != 2000 || page.ContentType != "text/html" || page.URL.String() != srv.URL+"/page" {
		t.Fatalf("Fetch = %d bytes, %q from %v, %v", len(page.Body), page.ContentType, page.URL, err)
	}
	// After a redirect, the page's address is where it came from.
	if page, err := g.Fetch(context.Background(), srv.URL+"/moved", 4096, 5*time.Second); err != nil || page.URL.String() != srv.URL+"/en/home" {
		t.Fatalf("Fetch after a redirect = %v, %v; want the page from %s/en/home", page.URL, err, srv.URL)
	}
	for _, path := range []string{"/page", "/stream"} {
		if _, err := g.Fetch(context.Background(), srv.URL+path, 1000, 5*time.Second); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Fetch %s over the limit = %v, want ErrTooLarge", path, err)
		}
	}
	if _, err := g.Fetch(context.Background(), srv.URL+"/missing", 1000, 5*time.Second); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch of a 404 = %v, want an error naming the status", err)
	}
	if _, err := (&Guard{}).Fetch(context.Background(), srv.URL+"/page", 1000, 5*time.Second); !errors.Is(err, ErrRefused) {
		t.Errorf("Fetch of a loopback URL by the production guard = %v, want ErrRefused", err)
	}
}

func TestBlockedTable(t *testing.T) {
	for _, tc := range []struct {
		ip      string
		blocked bool
	}{
		{"8.8.8.8", false}, {"1.1.1.1", false}, {"2001:4860:4860::8888", false},
		{"172.32.0.1", false}, {"172.15.255.255", false}, {"100.128.0.1", false},
		{"172.31.255.255", true}, {"100.100.100.200", true}, {"192.0.0.192", true},
		{"::ffff:10.0.0.1", true}, {"64:ff9b::808:808", false}, {"2002:808:808::", false},
	} {
		_, got := Blocked(netip.MustParseAddr(tc.ip))
		if got != tc.blocked {
			t.Errorf("Blocked(%s) = %v, want %v", tc.ip, got, tc.blocked)
		}
	}
}
