package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/netguard"
)

const adminToken = "test-admin-token"

// env is the public API on loopback over a real Raft node in a temp dir, with the
// admin API beside it.
type env struct {
	tb    testing.TB
	node  *raftnode.Node
	api   *api.API
	srv   *httptest.Server
	admin *admin.Client
}

// exampleDNS resolves example.com, the only name the tests' client URLs use.
type exampleDNS struct{}

func (exampleDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "example.com" {
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	}
	return nil, errors.New("no such host " + host)
}

// storeFunc adapts a function to api.Store, for stores that wrap the real one.
type storeFunc func(ctx context.Context, cmd fsm.Command) (any, error)

func (f storeFunc) Apply(ctx context.Context, cmd fsm.Command) (any, error) { return f(ctx, cmd) }

var _ api.Store = storeFunc(nil)

type envOption func(*envConfig)

type envConfig struct {
	wrap   func(api.Store) api.Store
	noSync bool
}

// withStore puts a wrapper between the API and the real node.
func withStore(wrap func(api.Store) api.Store) envOption {
	return func(c *envConfig) { c.wrap = wrap }
}

func newEnv(tb testing.TB, opts ...envOption) *env {
	tb.Helper()
	var ec envConfig
	for _, o := range opts {
		o(&ec)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := fsm.New()
	node, err := raftnode.Open(raftnode.Config{DataDir: tb.TempDir(), NodeID: "node1", RaftAddr: "127.0.0.1:0", Logger: log, NoSync: ec.noSync}, f)
	if err != nil {
		tb.Fatalf("open raft node: %v", err)
	}
	tb.Cleanup(func() { _ = node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		tb.Fatal(err)
	}
	var store api.Store = node
	if ec.wrap != nil {
		store = ec.wrap(node)
	}
	e := &env{tb: tb, node: node}
	e.srv = httptest.NewUnstartedServer(nil)
	e.api, err = api.New(api.Config{
		FSM: f, Store: store, Logger: log, Limits: api.Limits{Disabled: true}, AppURL: "https://app.test",
		Signer: blob.Signer{Key: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://" + e.srv.Listener.Addr().String()},
		// The sandbox has no DNS: the image host of the tests resolves to a
		// public address, as it would on the internet.
		Guard: &netguard.Guard{Resolver: exampleDNS{}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.api.Close)
	e.srv.Config.Handler = e.api
	e.srv.Start()
	tb.Cleanup(e.srv.Close)
	adm := httptest.NewServer(admin.Handler(admin.Config{Token: adminToken, FSM: f, Node: node, Logger: log}))
	tb.Cleanup(adm.Close)
	e.admin = &admin.Client{Server: adm.URL, Token: adminToken}
	return e
}

// account opens an account through the admin API and returns its id and key.
func (e *env) account(plan string, credits int64) (string, string) {
	e.tb.Helper()
	a, err := e.admin.CreateAccount(context.Background(), "acct-"+plan, plan, credits)
	if err != nil {
		e.tb.Fatalf("create account: %v", err)
	}
	return a.AccountID, a.APIKey
}

func (e *env) balance(accountID string) int64 {
	e.tb.Helper()
	a, ok := e.node.FSM.Account(accountID)
	if !ok {
		e.tb.Fatalf("account %s missing", accountID)
	}
	return a.Credits
}

// response is a finished exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error // transport error; set only by send
}

// send performs a request and never fails the test, so goroutines may use it.
func (e *env) send(method, path, key, body string, headers ...string) response {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		return response{Err: err}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return response{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw, Err: err}
}

// do is send that fails the test on a transport error.
func (e *env) do(method, path, key, body string, headers ...string) response {
	e.tb.Helper()
	r := e.send(method, path, key, body, headers...)
	if r.Err != nil {
		e.tb.Fatalf("%s %s: %v", method, path, r.Err)
	}
	return r
}

// create posts a video body, with an Idempotency-Key when idem is not empty.
func (e *env) create(key, idem, body string) response {
	e.tb.Helper()
	if idem == "" {
		return e.do(http.MethodPost, "/v1/videos", key, body)
	}
	return e.do(http.MethodPost, "/v1/videos", key, body, "Idempotency-Key", idem)
}

func (r response) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		tb.Fatalf("body is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// errorOf checks the error envelope and returns error.
func (r response) errorOf(tb testing.TB) map[string]any {
	tb.Helper()
	e, ok := r.json(tb)["error"].(map[string]any)
	if !ok {
		tb.Fatalf("no error envelope in %d answer: %s", r.Status, r.Body)
	}
	return e
}

func (r response) code(tb testing.TB) string {
	tb.Helper()
	c, _ := r.errorOf(tb)["code"].(string)
	return c
}

// wantStatus fails unless the answer has status want.
func (r response) wantStatus(tb testing.TB, want int) response {
	tb.Helper()
	if r.Status != want {
		tb.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r
}

// wantError fails unless the answer is status with error code.
func (r response) wantError(tb testing.TB, status int, code string) map[string]any {
	tb.Helper()
	r.wantStatus(tb, status)
	e := r.errorOf(tb)
	if e["code"] != code {
		tb.Fatalf("error code %v, want %s: %s", e["code"], code, r.Body)
	}
	return e
}

// sameBody fails unless two bodies are equal byte for byte.
func sameBody(tb testing.TB, got, want []byte) {
	tb.Helper()
	if !bytes.Equal(got, want) {
		tb.Fatalf("body differs from the original\n got: %s\nwant: %s", got, want)
	}
}
