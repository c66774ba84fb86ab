package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ErrRefused is wrapped by every refusal of an address; match it with errors.Is.
var ErrRefused = errors.New("address refused")

// ErrLookup is wrapped when a host's name could not be looked up for a
// reason that may pass (the resolver timed out or failed, SERVFAIL): the
// address may be fine, so it is not refused; the caller answers "try
// again". A name that does not exist is refused (ErrRefused).
var ErrLookup = errors.New("host lookup failed")

// ErrTooLarge is returned by Fetch when the response is bigger than allowed.
var ErrTooLarge = errors.New("response too large")

// RefusedError says which URL was refused and why, in words meant for the
// person who sent it (it goes into error.details).
type RefusedError struct {
	URL    string
	Reason string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s refused: %s", e.URL, e.Reason) }

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Resolver looks names up; *net.Resolver implements it. Tests inject their own
// to make a name resolve to whatever they need.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// maxRedirects bounds how many redirects a client with followRedirects follows.
const maxRedirects = 5

// Guard checks and reaches outside addresses. The zero value is the production
// policy with the system resolver.
type Guard struct {
	// AllowPrivate is the development switch: plain http and every address are
	// allowed. Never on in production; whoever sets it logs a warning.
	AllowPrivate bool
	// HTTPSOnly keeps plain http refused under AllowPrivate too: for addresses
	// a render node fetches, which it reads over https only.
	HTTPSOnly bool
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver Resolver

	// Test hooks: an address let through despite the policy, and the TLS settings
	// (trusted roots). Unexported so that only this package's tests use them.
	allowAddr netip.AddrPort
	tlsConfig *tls.Config
}

func (g *Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// CheckURL parses raw and refuses it unless CheckSyntax allows it and its
// host resolves only to allowed addresses. It returns the parsed URL.
func (g *Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := g.CheckSyntax(raw)
	if err != nil {
		return nil, err
	}
	if _, err := g.resolve(ctx, raw, u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// CheckSyntax does every check of CheckURL that needs no DNS: the scheme, no
// credentials, and the host under CheckHost. Whoever skips the DNS step must
// check the addresses it dials (the agent's dialer does).
func (g *Guard) CheckSyntax(raw string) (*url.URL, error) {
	refuse := func(reason string) (*url.URL, error) { return nil, &RefusedError{URL: raw, Reason: reason} }
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return refuse("not a valid URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowPrivate && !g.HTTPSOnly:
	default:
		return refuse("the scheme must be https")
	}
	if u.User != nil {
		return refuse("credentials in the URL are not allowed")
	}
	if u.Hostname() == "" {
		return refuse("the URL has no host")
	}
	if g.AllowPrivate {
		return u, nil
	}
	if ip, _, ok := ParseHostIP(u.Hostname()); ok && g.allowed(ip, u.Port()) {
		return u, nil
	}
	if reason, bad := CheckHost(u.Hostname()); bad {
		return refuse(reason)
	}
	return u, nil
}

// resolve returns host's addresses, refusing the host if any of them is
// blocked: a name with one private address among public ones could be steered
// to it.
func (g *Guard) resolve(ctx context.Context, raw, host string) ([]netip.Addr, error) {
	if ip, _, ok := ParseHostIP(host); ok {
		return []netip.Addr{ip}, nil
	}
	ips, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		var de *net.DNSError
		if (errors.As(err, &de) && (de.IsTimeout || de.IsTemporary) && !de.IsNotFound) || ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrLookup, host, err)
		}
		return nil, &RefusedError{URL: raw, Reason: fmt.Sprintf("the host %s does not resolve: %v", host, err)}
	}
	if len(ips) == 0 {
		return nil, &RefusedError{URL: raw, Reason: fmt.Sprintf("the host %s has no addresses", host)}
	}
	if g.AllowPrivate {
		return ips, nil
	}
	for _, ip := range ips {
		if reason, bad := Blocked(ip); bad {
			return nil, &RefusedError{URL: raw, Reason: fmt.Sprintf("the host %s resolves to %s, a %s", host, ip, reason)}
		}
	}
	return ips, nil
}

func (g *Guard) allowed(ip netip.Addr, port string) bool {
	return g.allowAddr.IsValid() && g.allowAddr.Addr() == ip.Unmap() && fmt.Sprint(g.allowAddr.Port()) == port
}

// dial resolves and checks the host again at connect time and dials the checked
// address itself, so nothing between the check and the connect can swap it.
func (g *Guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: %w", addr, err)
	}
	ips, err := g.resolve(ctx, addr, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	var last error
	for _, ip := range ips {
		if !g.AllowPrivate {
			if reason, bad := Blocked(ip); bad && !g.allowed(ip, port) {
				return nil, &RefusedError{URL: addr, Reason: fmt.Sprintf("connecting to %s, a %s", ip, reason)}
			}
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("netguard: dial %s: %w", addr, last)
}

// Client returns an HTTP client that reaches only addresses the guard allows,
// checked at every connection. With followRedirects it follows at most 5
// redirects, each checked like the first URL; without, a redirect is returned
// as the response. It never uses a proxy from the environment: a proxy would
// make the address check meaningless.
func (g *Guard) Client(timeout time.Duration, followRedirects bool) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	if g.tlsConfig != nil {
		tr.TLSClientConfig = g.tlsConfig
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !followRedirects {
				return http.ErrUseLastResponse
			}
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			_, err := g.CheckSyntax(req.URL.String())
			return err
		},
	}
}

// Page is what Fetch got.
type Page struct {
	Body        []byte
	ContentType string
	// URL is where the body came from, after redirects: relative links in
	// the page resolve against it, not against the address asked for.
	URL *url.URL
}

// Fetch GETs raw through a guarded client that follows redirects and returns at
// most maxBytes of body (ErrTooLarge beyond), its content type and the address
// it came from. A non-2xx answer is an error that names the status.
func (g *Guard) Fetch(ctx context.Context, raw string, maxBytes int64, timeout time.Duration) (Page, error) {
	u, err := g.CheckURL(ctx, raw)
	if err != nil {
		return Page{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Page{}, fmt.Errorf("netguard: fetch %s: %w", raw, err)
	}
	req.Header.Set("User-Agent", "vidfarm/1 (+https://github.com/vidfarm/vidfarm)")
	resp, err := g.Client(timeout, true).Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("netguard: fetch %s: %w", raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Page{}, fmt.Errorf("netguard: fetch %s: the server answered %s", raw, resp.Status)
	}
	if resp.ContentLength > maxBytes {
		return Page{}, fmt.Errorf("netguard: fetch %s: %d bytes, more than %d: %w", raw, resp.ContentLength, maxBytes, ErrTooLarge)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return Page{}, fmt.Errorf("netguard: fetch %s: read: %w", raw, err)
	}
	if int64(len(body)) > maxBytes {
		return Page{}, fmt.Errorf("netguard: fetch %s: more than %d bytes: %w", raw, maxBytes, ErrTooLarge)
	}
	return Page{Body: body, ContentType: resp.Header.Get("Content-Type"), URL: resp.Request.URL}, nil
}
