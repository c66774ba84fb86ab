package tlsconf_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/tlsconf"
)

// testdata holds a CA and two certificates it signed (node, node2) for
// 127.0.0.1, valid until 2126; made with openssl (see docs/cluster.md, "TLS").
const td = "testdata/"

func TestConfigs(t *testing.T) {
	dir := t.TempDir()
	noPEM := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(noPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		build func() (*tls.Config, error)
		check func(*tls.Config) bool // nil: an ErrConfig is wanted
	}{
		{"server", func() (*tls.Config, error) { return tlsconf.Server(td+"node.pem", td+"node-key.pem", nil) },
			func(c *tls.Config) bool { return c.MinVersion == tls.VersionTLS12 && c.GetCertificate != nil }},
		{"server key of another certificate", func() (*tls.Config, error) { return tlsconf.Server(td+"node.pem", td+"node2-key.pem", nil) }, nil},
		{"server without key", func() (*tls.Config, error) { return tlsconf.Server(td+"node.pem", "", nil) }, nil},
		{"server missing file", func() (*tls.Config, error) { return tlsconf.Server(td+"nope.pem", td+"node-key.pem", nil) }, nil},
		{"client system CAs", func() (*tls.Config, error) { return tlsconf.Client("") },
			func(c *tls.Config) bool { return c.RootCAs == nil }},
		{"client private CA", func() (*tls.Config, error) { return tlsconf.Client(td + "ca.pem") },
			func(c *tls.Config) bool { return c.RootCAs != nil }},
		{"client CA file without PEM", func() (*tls.Config, error) { return tlsconf.Client(noPEM) }, nil},
		{"client CA file missing", func() (*tls.Config, error) { return tlsconf.Client(td + "nope.pem") }, nil},
		{"mutual", func() (*tls.Config, error) { return tlsconf.Mutual(td+"node.pem", td+"node-key.pem", td+"ca.pem", nil) },
			func(c *tls.Config) bool {
				return c.ClientAuth == tls.RequireAndVerifyClientCert && c.ClientCAs != nil && c.RootCAs != nil && c.GetClientCertificate != nil
			}},
		{"mutual without CA", func() (*tls.Config, error) { return tlsconf.Mutual(td+"node.pem", td+"node-key.pem", "", nil) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.build()
			if tc.check == nil {
				if !errors.Is(err, tlsconf.ErrConfig) {
					t.Fatalf("got %v, want ErrConfig", err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("got %+v, %v", c, err)
			}
		})
	}
}

// TestMutualHandshake: two ends with certificates of the CA connect; a
// client without a certificate is refused by the server.
func TestMutualHandshake(t *testing.T) {
	cfg, err := tlsconf.Mutual(td+"node.pem", td+"node-key.pem", td+"ca.pem", nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("ok"))
				}
			}()
		}
	}()
	anonymous, err := tlsconf.Client(td + "ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		ok   bool
	}{{"peer", cfg, true}, {"no client certificate", anonymous, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tls.Dial("tcp", ln.Addr().String(), tc.cfg)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			buf := make([]byte, 2)
			_, err = c.Read(buf)
			if got := err == nil && string(buf) == "ok"; got != tc.ok {
				t.Fatalf("read %q, %v; want accepted=%v", buf, err, tc.ok)
			}
		})
	}
}

// TestKeyPairReload: a renewed certificate is served once its files change;
// a renewal that does not load leaves the previous one in service, loudly.
func TestKeyPairReload(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	install := func(certSrc, keySrc []byte, at time.Time) {
		t.Helper()
		for p, b := range map[string][]byte{cert: certSrc, key: keySrc} {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(td + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	start := time.Now().Add(-time.Hour)
	install(read("node.pem"), read("node-key.pem"), start)
	// Reloads happen inside Certificate, on this goroutine: a plain buffer will do.
	logs := &bytes.Buffer{}
	kp, err := tlsconf.NewKeyPair(cert, key, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	subject := func() string {
		c, err := kp.Certificate()
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := subject(); got != "node" {
		t.Fatalf("first certificate %q, want node", got)
	}
	install(read("node2.pem"), read("node2-key.pem"), start.Add(time.Minute))
	waitFor(t, "the renewed certificate", func() bool { return subject() == "node2" })
	install([]byte("garbage"), read("node2-key.pem"), start.Add(2*time.Minute))
	waitFor(t, "the failed reload logged", func() bool {
		return subject() == "node2" && strings.Contains(logs.String(), "do not load")
	})
}

// waitFor polls cond; reloads are checked at most once a second.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 10 s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}
