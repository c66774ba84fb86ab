package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"syscall"
	"time"
)

// Limits of input image downloads (manual renders).
const (
	// MaxInputImageBytes is the largest input image the agent downloads.
	MaxInputImageBytes = 20 << 20
	// InputFetchTimeout bounds one input image download, redirects included.
	InputFetchTimeout = time.Minute
	maxInputRedirects = 5
)

// ErrInputRefused means an input image could not be used: not https, a
// private, loopback, link-local or metadata address, too large, not an
// image, or an error status. The message says which.
var ErrInputRefused = errors.New("input image refused")

// inputFetcher downloads the input images of manual renders from the
// addresses API clients gave. Those addresses are checked when the video is
// created, but a name can resolve elsewhere by the time the agent connects
// (DNS rebinding), so every connection, redirects included, is checked
// again at connect time by the dialer's Control hook.
type inputFetcher struct {
	client *http.Client
}

func newInputFetcher(allowPrivate bool, roots *x509.CertPool) *inputFetcher {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = refusePrivate
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would hide the address actually reached
		DialContext:           d.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &inputFetcher{client: &http.Client{
		Transport: tr,
		Timeout:   InputFetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxInputRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrInputRefused, maxInputRedirects)
			}
			if req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect to a %s address; only https is fetched", ErrInputRefused, req.URL.Scheme)
			}
			return nil
		},
	}}
}

// blockedPrefixes are ranges no input is fetched from, besides what
// netip.Addr's predicates already catch (loopback, private, link-local,
// multicast, unspecified). With those they cover every range the control
// plane's address guard (controlplane/netguard, which the agent may not
// import) refuses for webhooks; a test in cmd/vidfarm holds the two to the
// same answers. NAT64 and 6to4 are refused whole here, where the guard looks
// at the IPv4 address inside: stricter, never looser.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),     // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),      // documentation
	netip.MustParsePrefix("192.88.99.0/24"),    // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"),   // documentation
	netip.MustParsePrefix("203.0.113.0/24"),    // documentation
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, broadcast
	netip.MustParsePrefix("::/96"),             // IPv4-compatible
	netip.MustParsePrefix("100::/64"),          // discard-only
	netip.MustParsePrefix("fec0::/10"),         // site-local (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),      // NAT64: reaches any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),    // local-use NAT64
	netip.MustParsePrefix("2002::/16"),         // 6to4: embeds an IPv4 address
	netip.MustParsePrefix("2001::/32"),         // Teredo
	netip.MustParsePrefix("2001:db8::/32"),     // documentation
	netip.MustParsePrefix("fd00:ec2::254/128"), // AWS IMDS over IPv6 (also ULA)
}

// BlockedInputAddr reports whether an input must not be fetched from ip.
func BlockedInputAddr(ip netip.Addr) bool {
	if ip.Zone() != "" {
		return true // a scoped address names an interface of this machine
	}
	ip = ip.Unmap()
	// Not global unicast covers invalid, unspecified, loopback, link-local and
	// multicast addresses; private ranges are global unicast, so they are named.
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// refusePrivate is the dialer's Control hook: it runs for the address
// actually being connected to, after name resolution.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: address %q: %w", ErrInputRefused, address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: address %q: %w", ErrInputRefused, address, err)
	}
	if BlockedInputAddr(ip) {
		return fmt.Errorf("%w: %s is a loopback, private, link-local or otherwise non-public address (the agent's --allow-private-inputs permits it in development)", ErrInputRefused, ip)
	}
	return nil
}

// imageExt maps the sniffed media types the renderers read to a file
// extension (ffmpeg picks its image decoder by extension).
var imageExt = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/webp": ".webp",
	"image/gif":  ".gif",
	"image/bmp":  ".bmp",
}

// fetch downloads the image at rawURL to dst plus an extension that fits
// its content, and returns the path written.
func (f *inputFetcher) fetch(ctx context.Context, rawURL, dst string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: %q is not a URL", ErrInputRefused, rawURL)
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String() // no query: it may hold a signature
	if u.Scheme != "https" {
		return "", fmt.Errorf("%w: %s: only https addresses are fetched", ErrInputRefused, shown)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrInputRefused, shown, err)
	}
	req.Header.Set("Accept", "image/*")
	req.Header.Set("User-Agent", "vidfarm-agent")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("input image %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %s answered HTTP %d", ErrInputRefused, shown, resp.StatusCode)
	}
	if resp.ContentLength > MaxInputImageBytes {
		return "", fmt.Errorf("%w: %s is %d bytes; the limit is %d", ErrInputRefused, shown, resp.ContentLength, MaxInputImageBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxInputImageBytes+1))
	if err != nil {
		return "", fmt.Errorf("input image %s: %w", shown, err)
	}
	if len(data) > MaxInputImageBytes {
		return "", fmt.Errorf("%w: %s is larger than the limit of %d bytes", ErrInputRefused, shown, MaxInputImageBytes)
	}
	mediaType := http.DetectContentType(data)
	ext, ok := imageExt[mediaType]
	if !ok {
		return "", fmt.Errorf("%w: %s is %s, not a PNG, JPEG, WebP, GIF or BMP image", ErrInputRefused, shown, mediaType)
	}
	path := dst + ext
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("input image %s: %w", shown, err)
	}
	return path, nil
}
