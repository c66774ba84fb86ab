package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// fastRaft is Raft timing for single-node tests: a lone node cannot be
// deposed, so short timeouts only make it lead sooner.
var fastRaft = raftnode.Timing{Heartbeat: 100 * time.Millisecond, Election: 100 * time.Millisecond, LeaderLease: 100 * time.Millisecond}

// harness is one real control-plane node (Raft, bbolt, HTTP on loopback) per test.
type harness struct {
	t     *testing.T
	srv   *server.Server
	cfg   server.Config
	base  string
	admin *admin.Client
}

type option func(*server.Config)

func withLimits(l api.Limits) option { return func(c *server.Config) { c.Limits = l } }

// start boots a node; with no options the contract's rate limits are off so tests
// of other rules are not throttled.
func start(t *testing.T, opts ...option) *harness {
	t.Helper()
	cfg := server.Config{
		DataDir: t.TempDir(), NodeID: "node1", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		RaftListen: "127.0.0.1:0", AdminToken: "test-admin-token", AppURL: "https://app.test",
		Limits: api.Limits{Disabled: true},
		// One node leads itself as soon as its heartbeat timer fires; the
		// defaults are sized for clusters on busy machines, not for this.
		RaftTiming: fastRaft,
		// Failed tasks come back at once unless a test asks for a backoff.
		RetryBackoff: -1,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		// The sandbox has no DNS: the photo host of the avatar tests resolves to a
		// public address, as it would on the internet.
		ClientResolver: exampleDNS{"images.example.com": "93.184.215.14", "img.example.com": "93.184.215.14", "a.example.com": "93.184.215.14"},
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	h := &harness{t: t, srv: srv, cfg: cfg, base: srv.PublicURL(),
		admin: &admin.Client{Server: "http://" + srv.AdminAddr(), Token: cfg.AdminToken}}
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *harness) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.srv.Close(ctx)
}

// account creates an account and returns its id and first key.
func (h *harness) account(plan string, credits int64) (string, string) {
	h.t.Helper()
	a, err := h.admin.CreateAccount(context.Background(), "acct-"+plan, plan, credits)
	if err != nil {
		h.t.Fatalf("create account: %v", err)
	}
	return a.AccountID, a.APIKey
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// json decodes the body into a generic map.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not JSON (%v): %s", err, r.Body)
	}
	return m
}

// errorCode returns error.code of an error envelope, checking the envelope's shape.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error envelope in %d answer: %s", r.Status, r.Body)
	}
	for _, f := range []string{"code", "message", "retryable", "request_id"} {
		if _, ok := e[f]; !ok {
			t.Fatalf("error envelope lacks %q: %s", f, r.Body)
		}
	}
	return e["code"].(string)
}

// do sends a request with an API key (empty: none) and an optional JSON body
// (string or []byte sent as is, anything else marshalled).
func (h *harness) do(method, path, key string, body any, headers ...string) response {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// exampleDNS is the DNS boundary for client URLs: the names a test uses, and
// nothing else.
type exampleDNS map[string]string

func (d exampleDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := d[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}
