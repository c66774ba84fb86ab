package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
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
	// The same through a name that resolves to loopback: refused at connect time.
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if _, err := newInputFetcher(false, roots).fetch(ctx, byName+"/boat.png", filepath.Join(dir, "b")); !errors.Is(err, ErrInputRefused) {
		t.Errorf("fetch from localhost = %v, want ErrInputRefused", err)
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
		{"http://example.com/a.png", "only https"},
		{"ftp://example.com/a.png", "only https"},
		{"not a url", "not a URL"},
		{srv.URL + "/text", "not a PNG, JPEG"},
		{srv.URL + "/huge", "30000000 bytes"},
		{srv.URL + "/endless", "larger than the limit"},
		{srv.URL + "/missing", "HTTP 404"},
		{srv.URL + "/redirect-http", "only https is fetched"},
	} {
		_, err := f.fetch(context.Background(), tc.url, filepath.Join(t.TempDir(), "x"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fetch %s = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
}

func TestBlockedAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1":          true,
		"10.1.2.3":           true,
		"172.16.0.1":         true,
		"192.168.1.1":        true,
		"169.254.169.254":    true, // cloud metadata
		"100.64.0.1":         true,
		"0.0.0.0":            true,
		"255.255.255.255":    true,
		"224.0.0.1":          true,
		"::1":                true,
		"::":                 true,
		"fe80::1":            true,
		"fc00::1":            true,
		"fd00:ec2::254":      true,
		"::ffff:127.0.0.1":   true, // IPv4-mapped loopback
		"::ffff:10.0.0.1":    true,
		"64:ff9b::a00:1":     true, // NAT64 of 10.0.0.1
		"2002:a00:1::1":      true, // 6to4 of 10.0.0.1
		"8.8.8.8":            false,
		"93.184.215.14":      false,
		"2606:4700::6810:85": false,
		"::ffff:8.8.8.8":     false,
	} {
		if got := BlockedInputAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("BlockedInputAddr(%s) = %v, want %v", addr, got, want)
		}
	}
	if err := refusePrivate("tcp4", "10.0.0.1:443", nil); !errors.Is(err, ErrInputRefused) {
		t.Errorf("refusePrivate(10.0.0.1) = %v", err)
	}
	if err := refusePrivate("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("refusePrivate(8.8.8.8) = %v", err)
	}
}
