package agent

import (
	"bytes"
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
	"strings"
	"syscall"
	"time"

	"github.com/vidfarm/vidfarm/imageguard"
	"github.com/vidfarm/vidfarm/netguard"
)

// Limits of input image downloads (manual renders).
const (
	// MaxInputImageBytes is the largest input image the agent downloads.
	MaxInputImageBytes = 20 << 20
	// InputFetchTimeout bounds one input image download, redirects included.
	InputFetchTimeout = time.Minute
	maxInputRedirects = 5
)

// The pixel limits of an input image, checked before any tool reads it:
// the control plane's too (package imageguard says why).
const (
	MaxInputImageSide   = imageguard.MaxSide
	MaxInputImagePixels = imageguard.MaxPixels
)

// ErrInputRefused means an input image could not be used: not https, a
// private, loopback, link-local or metadata address, too large (in bytes
// or in pixels), not an image or one whose header cannot be read, or an
// error status. The message says which.
var ErrInputRefused = errors.New("input image refused")

// inputFetcher downloads the input images of manual renders (and logos and
// avatar photos) from the addresses API clients gave, under the farm's one
// address policy (package netguard). Those addresses are checked when the
// video is created, and again here before the request (guard.CheckSyntax);
// a name can resolve elsewhere by the time the agent connects (DNS
// rebinding), so every connection, redirects included, is checked again
// at connect time by the dialer's Control hook, on the address actually
// being connected to.
type inputFetcher struct {
	guard  netguard.Guard
	client *http.Client
}

func newInputFetcher(allowPrivate bool, roots *x509.CertPool) *inputFetcher {
	f := &inputFetcher{guard: netguard.Guard{AllowPrivate: allowPrivate, HTTPSOnly: true}}
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
	f.client = &http.Client{
		Transport: tr,
		Timeout:   InputFetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxInputRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrInputRefused, maxInputRedirects)
			}
			_, err := f.checkURL(req.URL.String(), "redirect to ")
			return err
		},
	}
	return f
}

// checkURL parses raw and refuses it unless the address policy allows it.
// Errors name the address after prefix, without its query, which may hold
// a signature.
func (f *inputFetcher) checkURL(raw, prefix string) (*url.URL, error) {
	u, err := f.guard.CheckSyntax(raw)
	if err == nil {
		return u, nil
	}
	shown := raw
	if i := strings.IndexAny(shown, "?#"); i >= 0 {
		shown = shown[:i]
	}
	reason := err.Error()
	if re := (*netguard.RefusedError)(nil); errors.As(err, &re) {
		reason = re.Reason // without the URL, which may hold a signature
	}
	return nil, fmt.Errorf("%w: %s%s: %s", ErrInputRefused, prefix, shown, reason)
}

// refusePrivate is the dialer's Control hook: it runs for the address
// actually being connected to, after name resolution, and refuses what
// netguard.Blocked refuses.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: address %q: %w", ErrInputRefused, address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: address %q: %w", ErrInputRefused, address, err)
	}
	if reason, bad := netguard.Blocked(ip); bad {
		return fmt.Errorf("%w: connecting to %s, a %s (the agent's --allow-private-inputs permits it in development)", ErrInputRefused, ip, reason)
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

// checkImagePixels reads the header of the image named shown, of the sniffed
// mediaType, from r, and refuses it (ErrInputRefused) when the header cannot
// be read or gives more pixels than MaxInputImageSide and
// MaxInputImagePixels allow. Only the header is read.
func checkImagePixels(shown, mediaType string, r io.Reader) error {
	if !imageguard.Readable(mediaType) {
		return fmt.Errorf("%w: %s is %s, not a PNG, JPEG, WebP, GIF or BMP image", ErrInputRefused, shown, mediaType)
	}
	w, h, err := imageguard.Size(mediaType, r)
	if err != nil {
		return fmt.Errorf("%w: %s starts as %s but its header cannot be read: %w", ErrInputRefused, shown, mediaType, err)
	}
	if err := imageguard.Check(w, h); err != nil {
		if errors.Is(err, imageguard.ErrTooLarge) {
			return fmt.Errorf("%w: %s is %w: scale it down", ErrInputRefused, shown, err)
		}
		return fmt.Errorf("%w: %s is %w", ErrInputRefused, shown, err)
	}
	return nil
}

// imageInput is j.input for an image the account stored with the control
// plane (a file asset shown as a scene, a brand kit's logo, a photo
// avatar's picture), checked as downloaded images are (checkImagePixels)
// before any tool reads it: the control plane refuses oversized images when
// they are completed, but not those completed before it did.
func (j *job) imageInput(ctx context.Context, name string) (string, error) {
	path, err := j.input(ctx, name)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("input %s: %w", name, err)
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("input %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("input %s: %w", name, err)
	}
	if err := checkImagePixels("input "+name, http.DetectContentType(head[:n]), f); err != nil {
		return "", unusableInputError{err}
	}
	return path, nil
}

// unusableInputError marks a failure of the video's own input that no
// attempt gets past, on this node or another: the task is reported failed
// permanently (wire.FailRequest.Permanent) and the video fails now rather
// than after minutes of retries that would all end the same way.
type unusableInputError struct{ error }

func (e unusableInputError) Unwrap() error { return e.error }

// isUnusableInput reports whether err is a failure no retry gets past.
func isUnusableInput(err error) bool {
	var u unusableInputError
	return errors.As(err, &u)
}

// statusError is an input address that answered other than 200.
type statusError struct {
	shown string
	code  int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: %s answered HTTP %d", ErrInputRefused, e.shown, e.code)
}

func (e *statusError) Unwrap() error { return ErrInputRefused }

// unusable reports whether a download failed for a reason of the address
// itself: every refusal (not https, a private address, too large, not an
// image, a 4xx) but a status a server gives while it is busy or down
// (408, 429, 5xx), and a certificate for another name (the audit's
// https://93.184.216.34/a.png), which the next attempt meets again. A
// network error, a timeout or a certificate this node cannot verify (its
// own CA bundle may be the fault) is retried, on another node when there
// is one.
func unusable(err error) bool {
	var hostname x509.HostnameError
	if errors.As(err, &hostname) {
		return true
	}
	if se := (*statusError)(nil); errors.As(err, &se) {
		return se.code != http.StatusRequestTimeout && se.code != http.StatusTooManyRequests && se.code < 500
	}
	return errors.Is(err, ErrInputRefused)
}

// fetch downloads the image at rawURL to dst plus an extension that fits
// its content, and returns the path written. An error the address itself
// causes is an unusableInputError.
func (f *inputFetcher) fetch(ctx context.Context, rawURL, dst string) (string, error) {
	path, err := f.download(ctx, rawURL, dst)
	if err != nil && unusable(err) {
		err = unusableInputError{err}
	}
	return path, err
}

func (f *inputFetcher) download(ctx context.Context, rawURL, dst string) (string, error) {
	u, err := f.checkURL(rawURL, "")
	if err != nil {
		return "", err
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String() // no query: it may hold a signature
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
		return "", &statusError{shown: shown, code: resp.StatusCode}
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
	if err := checkImagePixels(shown, mediaType, bytes.NewReader(data)); err != nil {
		return "", err
	}
	path := dst + ext
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("input image %s: %w", shown, err)
	}
	return path, nil
}
