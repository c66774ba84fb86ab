package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInputFetchRefusesLoopbackUnlessAllowed(t *testing.T) {
	t.Parallel()
	srv := pngServer(t) // https on 127.0.0.1
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	dir := t.TempDir()
	ctx := context.Background()

	_, err := newInputFetcher(false, roots).fetch(ctx, srv.URL+"/boat.png", filepath.Join(dir, "a"))
	if !errors.Is(err, ErrInputRefused) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("fetch from 127.0.0.1 = %v, want ErrInputRefused naming the address", err)
	}
	// The same through the name of this machine: refused before connecting.
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if _, err := newInputFetcher(false, roots).fetch(ctx, byName+"/boat.png", filepath.Join(dir, "b")); !errors.Is(err, ErrInputRefused) {
		t.Errorf("fetch from localhost = %v, want ErrInputRefused", err)
	}
	// Past the address check (as a name that turned private after it would be),
	// the dialer refuses the connection itself.
	if _, err := newInputFetcher(false, roots).client.Get(srv.URL + "/boat.png"); !errors.Is(err, ErrInputRefused) || !strings.Contains(err.Error(), "connecting to 127.0.0.1, a loopback address") {
		t.Errorf("connecting to 127.0.0.1 = %v, want ErrInputRefused from the dialer", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused fetches wrote %d files", len(entries))
	}

	path, err := newInputFetcher(true, roots).fetch(ctx, srv.URL+"/boat.png", filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Ext(path) != ".png" {
		t.Errorf("path = %s, want a .png", path)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Errorf("downloaded file is not the PNG: %v", err)
	}
}

func TestInputFetchRefusals(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			_, _ = w.Write([]byte("<html>not an image</html>"))
		case "/huge":
			w.Header().Set("Content-Length", "30000000")
			w.WriteHeader(http.StatusOK)
		case "/endless": // no Content-Length, more than the limit
			buf := make([]byte, 1<<20)
			copy(buf, "\x89PNG\r\n\x1a\n")
			for range MaxInputImageBytes>>20 + 2 {
				if _, err := w.Write(buf); err != nil {
					return
				}
			}
		case "/redirect-http":
			http.Redirect(w, r, "http://example.com/a.png", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	f := newInputFetcher(true, roots)
	for _, tc := range []struct{ url, want string }{
		{"http://example.com/a.png", "the scheme must be https"},
		{"ftp://example.com/a.png", "the scheme must be https"},
		{"not a url", "the scheme must be https"},
		{srv.URL + "/text", "not a PNG, JPEG"},
		{srv.URL + "/huge", "30000000 bytes"},
		{srv.URL + "/endless", "larger than the limit"},
		{srv.URL + "/missing", "HTTP 404"},
		{srv.URL + "/redirect-http", "redirect to http://example.com/a.png: the scheme must be https"},
	} {
		_, err := f.fetch(context.Background(), tc.url, filepath.Join(t.TempDir(), "x"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fetch %s = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
}

// A failure the address itself causes is unusable input (the video fails
// at once, FailRequest.Permanent); one a busy or broken server causes, or
// the network, is retried.
func TestInputFetchUnusable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			_, _ = w.Write([]byte("<html>not an image</html>"))
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/slow-down":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/gone":
			w.WriteHeader(http.StatusGone)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	f := newInputFetcher(true, roots)
	// httptest's certificate names example.com, 127.0.0.1 and ::1, not localhost.
	otherName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		url      string
		unusable bool
	}{
		{srv.URL + "/missing", true},
		{srv.URL + "/gone", true},
		{srv.URL + "/text", true},
		{"http://example.com/a.png", true},
		{otherName + "/a.png", true},
		{srv.URL + "/busy", false},
		{srv.URL + "/slow-down", false},
		{closed.URL + "/a.png", false},
	} {
		_, err := f.fetch(context.Background(), tc.url, filepath.Join(t.TempDir(), "x"))
		if err == nil || isUnusableInput(err) != tc.unusable {
			t.Errorf("fetch %s = %v: unusable %v, want %v", tc.url, err, isUnusableInput(err), tc.unusable)
		}
	}
}

// urlTable is netguard's table of refused and accepted URLs, the one every
// entry point that takes a URL is tested with.
type urlTable struct {
	DNS      map[string][]string `json:"dns"`
	Refused  [][2]string         `json:"refused"`
	Accepted []string            `json:"accepted"`
}

// TestInputFetchAddressTable holds the fetcher to the farm's one address
// policy. An address the table spells out is refused before any connection;
// for a name, the agent's own resolver decides where it connects, so each
// address the table's DNS gives it goes through the dialer's connect-time
// check instead.
func TestInputFetchAddressTable(t *testing.T) {
	t.Parallel()
	var table urlTable
	raw, err := os.ReadFile("../netguard/testdata/urls.json")
	if err == nil {
		err = json.Unmarshal(raw, &table)
	}
	if err != nil {
		t.Fatal(err)
	}
	// dialed is what the dialer would connect to for a URL the address check
	// lets through: the table's DNS answers for a name, else the address.
	dialed := func(u *url.URL) []string {
		if addrs, named := table.DNS[strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")]; named {
			return addrs
		}
		return []string{u.Hostname()}
	}
	dialRefusals := func(u *url.URL) (refusals []string) {
		for _, a := range dialed(u) {
			if err := refusePrivate("tcp", net.JoinHostPort(a, "443"), nil); err != nil {
				refusals = append(refusals, err.Error())
			}
		}
		return refusals
	}
	f := newInputFetcher(false, nil)
	dir := t.TempDir()
	for _, c := range table.Refused {
		rawURL, want := c[0], c[1]
		if u, err := f.checkURL(rawURL, ""); err == nil {
			refusals := dialRefusals(u)
			if addrs := dialed(u); len(addrs) > 0 && !strings.Contains(strings.Join(refusals, "\n"), want) {
				t.Errorf("%s: connecting to %v refused with %q, want a refusal that mentions %q", rawURL, addrs, refusals, want)
			}
			continue
		}
		_, err := f.fetch(context.Background(), rawURL, filepath.Join(dir, "x"))
		if !errors.Is(err, ErrInputRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("fetch %s = %v, want ErrInputRefused mentioning %q", rawURL, err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused fetches wrote %d files", len(entries))
	}
	for _, rawURL := range table.Accepted {
		u, err := f.checkURL(rawURL, "")
		if err != nil {
			t.Errorf("checkURL(%s) = %v, want allowed", rawURL, err)
			continue
		}
		if refusals := dialRefusals(u); len(refusals) > 0 {
			t.Errorf("%s: connecting refused: %q", rawURL, refusals)
		}
	}
}
