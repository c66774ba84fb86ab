package netguard

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
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
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	a, ok := f.answers[host]
	if !ok || len(a[0]) == 0 {
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

// urlTable is testdata/urls.json: the refused and accepted URLs every entry
// point that takes a URL is tested with (here, the control plane's API and
// the agent), and the DNS answers they assume.
type urlTable struct {
	DNS      map[string][]string `json:"dns"`
	Refused  [][2]string         `json:"refused"`
	Accepted []string            `json:"accepted"`
}

func loadURLTable(t *testing.T) (urlTable, *fakeDNS) {
	t.Helper()
	var table urlTable
	raw, err := os.ReadFile("testdata/urls.json")
	if err == nil {
		err = json.Unmarshal(raw, &table)
	}
	if err != nil {
		t.Fatal(err)
	}
	dns := newFakeDNS()
	for name, a := range table.DNS {
		dns.set(name, addrs(a...))
	}
	return table, dns
}

func TestCheckURLTable(t *testing.T) {
	table, dns := loadURLTable(t)
	g := &Guard{Resolver: dns}
	for _, raw := range table.Accepted {
		if _, err := g.CheckURL(context.Background(), raw); err != nil {
			t.Errorf("CheckURL(%q) = %v, want allowed", raw, err)
		}
	}
	for _, c := range table.Refused {
		raw, want := c[0], c[1]
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

// failingDNS fails every lookup with err.
type failingDNS struct{ err error }

func (f failingDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, f.err
}

// TestLookupFailureIsNotARefusal: a lookup that may pass says nothing about
// the address, so the caller can answer "try again" instead of "this
// address is refused"; a name that does not exist is refused.
func TestLookupFailureIsNotARefusal(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		err     error
		refused bool
	}{
		{"timeout", context.Background(), &net.DNSError{Err: "i/o timeout", Name: "h.example", IsTimeout: true}, false},
		{"servfail", context.Background(), &net.DNSError{Err: "server misbehaving", Name: "h.example", IsTemporary: true}, false},
		{"out of time", canceled, context.Canceled, false},
		{"no such host", context.Background(), &net.DNSError{Err: "no such host", Name: "h.example", IsNotFound: true}, true},
		{"no such host, temporary too", context.Background(), &net.DNSError{Err: "no such host", Name: "h.example", IsNotFound: true, IsTemporary: true}, true},
		{"any other failure", context.Background(), errors.New("bad name"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := (&Guard{Resolver: failingDNS{c.err}}).CheckURL(c.ctx, "https://h.example/x")
			if errors.Is(err, ErrRefused) != c.refused || errors.Is(err, ErrLookup) == c.refused {
				t.Fatalf("err = %v: refused %v, lookup failed %v; want refused %v", err,
					errors.Is(err, ErrRefused), errors.Is(err, ErrLookup), c.refused)
			}
		})
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

// TestBlocked walks every range of the policy: an address inside it is
// refused for the reason named, the addresses just outside are not.
func TestBlocked(t *testing.T) {
	for _, tc := range []struct{ ip, reason string }{
		{"0.0.0.0", "unspecified"}, {"0.255.255.255", "unspecified"}, {"1.0.0.0", ""},
		{"9.255.255.255", ""}, {"10.0.0.0", "private"}, {"10.255.255.255", "private"}, {"11.0.0.0", ""},
		{"100.63.255.255", ""}, {"100.64.0.0", "carrier-grade NAT"}, {"100.127.255.255", "carrier-grade NAT"}, {"100.128.0.0", ""},
		{"100.100.100.200", "cloud metadata"},
		{"126.255.255.255", ""}, {"127.0.0.0", "loopback"}, {"127.255.255.255", "loopback"}, {"128.0.0.0", ""},
		{"169.253.255.255", ""}, {"169.254.0.0", "link-local"}, {"169.254.255.255", "link-local"}, {"169.255.0.0", ""},
		{"169.254.169.254", "cloud metadata"}, {"169.254.170.2", "link-local"},
		{"172.15.255.255", ""}, {"172.16.0.0", "private"}, {"172.31.255.255", "private"}, {"172.32.0.0", ""},
		{"192.0.0.0", "IETF protocol assignment"}, {"192.0.0.255", "IETF"}, {"192.0.1.0", ""},
		{"192.0.2.0", "documentation"}, {"192.0.2.255", "documentation"}, {"192.0.3.0", ""},
		{"192.88.99.0", "6to4 relay"}, {"192.88.100.0", ""},
		{"192.167.255.255", ""}, {"192.168.0.0", "private"}, {"192.168.255.255", "private"}, {"192.169.0.0", ""},
		{"198.17.255.255", ""}, {"198.18.0.0", "benchmarking"}, {"198.19.255.255", "benchmarking"}, {"198.20.0.0", ""},
		{"198.51.100.0", "documentation"}, {"198.51.101.0", ""}, {"203.0.113.0", "documentation"}, {"203.0.114.0", ""},
		{"223.255.255.255", ""}, {"224.0.0.0", "multicast"}, {"239.255.255.255", "multicast"},
		{"240.0.0.0", "reserved"}, {"255.255.255.254", "reserved"}, {"255.255.255.255", "broadcast"},
		{"8.8.8.8", ""}, {"1.1.1.1", ""}, {"93.184.215.14", ""},

		{"::", "unspecified"}, {"::1", "loopback"}, {"::2", "IPv4-compatible"}, {"::7f00:1", "IPv4-compatible"},
		{"::808:808", "IPv4-compatible"}, {"::1:0:0", "reserved IPv6"},
		{"::ffff:127.0.0.1", "IPv4-mapped form of a loopback"}, {"::ffff:10.0.0.1", "IPv4-mapped form of a private"},
		{"::ffff:8.8.8.8", ""},
		{"::ffff:0:0:0", "IPv4-translated"}, {"::ffff:0:7f00:1", "IPv4-translated"}, {"::ffff:0:808:808", "IPv4-translated"},
		{"64:ff9b::a00:1", "NAT64 address embedding a private"}, {"64:ff9b::7f00:1", "NAT64 address embedding a loopback"},
		{"64:ff9b::808:808", ""}, {"64:ff9b::1:808:808", "reserved IPv6"},
		{"64:ff9b:1::a9fe:a9fe", "local-use NAT64 address embedding a cloud metadata"}, {"64:ff9b:1::808:808", ""},
		{"64:ff9b:1:1::808:808", "64:ff9b:1::/96 layout"}, {"64:ff9b:1:0:0:1::", "64:ff9b:1::/96 layout"},
		{"2002:a00:1::", "6to4 address embedding a private"}, {"2002:7f00:1::1", "6to4 address embedding a loopback"},
		{"2002:808:808::1", ""},
		{"100::", "discard-only"}, {"100::ffff:ffff:ffff:ffff", "discard-only"}, {"100:0:0:1::", "reserved IPv6"},
		{"2001::", "Teredo"}, {"2001:0:ffff:ffff::", "Teredo"}, {"2001:2::1", "benchmarking"},
		{"2001:10::1", "IETF protocol assignment"}, {"2001:1ff::1", "IETF protocol assignment"}, {"2001:200::1", ""},
		{"2001:db8::1", "documentation"}, {"2001:db9::1", ""}, {"3fff::1", "documentation"}, {"3fff:fff::1", "documentation"},
		{"5f00::1", "segment-routing"},
		{"fc00::1", "unique-local"}, {"fdff:ffff::1", "unique-local"}, {"fd00:ec2::254", "cloud metadata"},
		{"fe80::1", "link-local"}, {"febf::1", "link-local"}, {"fe80::1%eth0", "zone"},
		{"fec0::1", "site-local"}, {"feff::1", "site-local"}, {"ff00::1", "multicast"}, {"ff02::1", "multicast"},
		{"4000::1", "reserved IPv6"}, {"e000::1", "reserved IPv6"}, {"1fff:ffff::1", "reserved IPv6"},
		{"2000::1", ""}, {"2606:4700::6810:85", ""}, {"2a00:1450:4001::200e", ""}, {"3ffe::1", ""},
	} {
		reason, blocked := Blocked(netip.MustParseAddr(tc.ip))
		if blocked != (tc.reason != "") || !strings.Contains(reason, tc.reason) {
			t.Errorf("Blocked(%s) = %q, %v; want blocked %v for a reason mentioning %q", tc.ip, reason, blocked, tc.reason != "", tc.reason)
		}
	}
	if reason, blocked := Blocked(netip.Addr{}); !blocked || reason == "" {
		t.Errorf("the zero Addr is not refused: %q, %v", reason, blocked)
	}
}

// TestEmbeddedForms checks every IPv4 /16, at three places in it: the IPv6
// forms that carry an IPv4 address are refused exactly when the address is
// (IPv4-mapped, NAT64, 6to4), and the forms nothing public uses are always
// refused (IPv4-compatible, IPv4-translated).
func TestEmbeddedForms(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			for _, c := range []byte{0, 99, 255} {
				v4 := [4]byte{byte(a), byte(b), c, 1}
				_, want := Blocked(netip.AddrFrom4(v4))
				carried := map[string]netip.Addr{
					"IPv4-mapped": netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
					"NAT64":       netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
					"6to4":        netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3], 15: 1}),
				}
				for form, ip := range carried {
					if _, got := Blocked(ip); got != want {
						t.Fatalf("%s %s: blocked %v, the IPv4 address %v", form, ip, got, want)
					}
				}
				for _, ip := range []netip.Addr{
					netip.AddrFrom16([16]byte{12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
					netip.AddrFrom16([16]byte{8: 0xff, 9: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
				} {
					if _, got := Blocked(ip); !got {
						t.Fatalf("%s is not refused", ip)
					}
				}
			}
		}
	}
}

func TestParseHostIP(t *testing.T) {
	for _, tc := range []struct {
		host, ip  string
		canonical bool
	}{
		{"127.0.0.1", "127.0.0.1", true}, {"127.0.0.1.", "127.0.0.1", true}, {"[::1]", "::1", true},
		{"::FFFF:7F00:1", "::ffff:127.0.0.1", true}, {"fe80::1%eth0", "fe80::1%eth0", true},
		{"2130706433", "127.0.0.1", false}, {"0177.0.0.1", "127.0.0.1", false}, {"0x7f.0.0.1", "127.0.0.1", false},
		{"0X7F.1", "127.0.0.1", false}, {"127.1", "127.0.0.1", false}, {"127.0.1", "127.0.0.1", false},
		{"10.1.258", "10.1.1.2", false}, {"0x", "0.0.0.0", false}, {"0", "0.0.0.0", false}, {"017700000001", "127.0.0.1", false},
		{"4294967295", "255.255.255.255", false},
		{"4294967296", "", false}, {"1.2.3.256", "", false}, {"256.1", "", false}, {"1.2.3.4.5", "", false},
		{"08.0.0.1", "", false}, {"0xg.1", "", false}, {"1..1", "", false}, {"example.com", "", false}, {"", "", false},
	} {
		ip, canonical, ok := ParseHostIP(tc.host)
		if ok != (tc.ip != "") || (ok && (ip != netip.MustParseAddr(tc.ip) || canonical != tc.canonical)) {
			t.Errorf("ParseHostIP(%q) = %v, %v, %v; want %q, canonical %v", tc.host, ip, canonical, ok, tc.ip, tc.canonical)
		}
	}
}

func TestHTTPSOnlyUnderAllowPrivate(t *testing.T) {
	g := &Guard{AllowPrivate: true, HTTPSOnly: true}
	if _, err := g.CheckSyntax("https://127.0.0.1/x.png"); err != nil {
		t.Errorf("AllowPrivate with HTTPSOnly refuses a private https address: %v", err)
	}
	if _, err := g.CheckSyntax("http://127.0.0.1/x.png"); !errors.Is(err, ErrRefused) {
		t.Errorf("AllowPrivate with HTTPSOnly lets plain http through: %v", err)
	}
}
