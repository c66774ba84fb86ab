package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

type fakeNode struct {
	leading bool
	deposed bool // leads by its own account, but a quorum says otherwise
	leader  string
	others  []string // the members left, once this node was removed
}

func (f *fakeNode) Removed() ([]string, bool) { return f.others, len(f.others) > 0 }

func (f *fakeNode) ID() string               { return "self" }
func (f *fakeNode) IsLeader() bool           { return f.leading }
func (f *fakeNode) Leader() (string, string) { return f.leader, "" }

func (f *fakeNode) VerifyLeader(context.Context) error {
	if f.deposed {
		return errors.New("leadership lost")
	}
	return nil
}

type members map[string]fsm.Member

func (m members) Member(id string) (fsm.Member, bool) { v, ok := m[id]; return v, ok }

func TestForwarder(t *testing.T) {
	var seen http.Header
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		_, _ = io.WriteString(w, "leader:"+r.URL.RequestURI())
	}))
	defer leader.Close()
	local := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "local") })
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	known := members{"L": {ID: "L", PublicURL: "http://unused", AdminURL: leader.URL, AgentURL: "http://unused"},
		"D": {ID: "D", PublicURL: "http://unused", AdminURL: dead.URL, AgentURL: "http://unused"}}
	isMetrics := func(r *http.Request) bool { return r.URL.Path == "/metrics" }

	for _, tc := range []struct {
		name      string
		node      *fakeNode
		members   members
		path      string
		forwarded string
		status    int
		body      string
	}{
		{"the leader answers itself", &fakeNode{leading: true}, known, "/admin/v1/status", "", 200, "local"},
		{"local requests stay on a follower", &fakeNode{leader: "L"}, known, "/metrics", "", 200, "local"},
		{"a follower forwards to the leader's listener of the same kind", &fakeNode{leader: "L"}, known, "/admin/v1/accounts/a?x=1", "", 200, "leader:/admin/v1/accounts/a?x=1"},
		{"no leader", &fakeNode{}, known, "/admin/v1/status", "", 503, ""},
		{"a deposed leader refuses reads", &fakeNode{leading: true, deposed: true}, known, "/admin/v1/status", "", 503, ""},
		{"leader without addresses", &fakeNode{leader: "M"}, known, "/admin/v1/status", "", 503, ""},
		{"forwarded once already", &fakeNode{leader: "L"}, known, "/admin/v1/status", "other", 503, ""},
		{"the leader does not answer", &fakeNode{leader: "D"}, known, "/admin/v1/status", "", 503, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			var logs bytes.Buffer // the forwarder logs before ServeHTTP returns
			fw := NewForwarder(tc.node, tc.members, Admin, slog.New(slog.NewJSONHandler(&logs, nil)), isMetrics, nil)
			var refused []int
			fw.Refused = func(r *http.Request, status int, d time.Duration) {
				if r.URL.Path != tc.path || d < 0 {
					t.Errorf("Refused(%s, %d, %v), want the request's path %s", r.URL.Path, status, d, tc.path)
				}
				refused = append(refused, status)
			}
			h := fw.Wrap(local)
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.forwarded != "" {
				req.Header.Set(HeaderForwardedBy, tc.forwarded)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status == 503 {
				var env struct {
					Error struct {
						Code      string `json:"code"`
						Retryable bool   `json:"retryable"`
						RequestID string `json:"request_id"`
					} `json:"error"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code != "upstream_error" || !env.Error.Retryable || env.Error.RequestID == "" || rec.Header().Get("Retry-After") != "1" {
					t.Fatalf("503 without the retryable envelope: %s", rec.Body)
				}
				// The refusal never reaches the wrapped handler's metrics
				// and log: the forwarder reports it, once, and logs it with
				// the request id the client got.
				if len(refused) != 1 || refused[0] != 503 {
					t.Fatalf("Refused told %v, want one 503", refused)
				}
				var line struct {
					RequestID string `json:"request_id"`
					Status    int    `json:"status"`
					Method    string `json:"method"`
					Path      string `json:"path"`
					Listener  string `json:"listener"`
				}
				if n := bytes.Count(logs.Bytes(), []byte("\n")); n != 1 {
					t.Fatalf("%d log lines, want 1:\n%s", n, logs.String())
				}
				if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line.RequestID != env.Error.RequestID ||
					line.RequestID != rec.Header().Get("X-Request-Id") || line.Status != 503 || line.Method != "GET" ||
					line.Path != req.URL.Path || line.Listener != "admin" {
					t.Fatalf("log line %+v (%v), want request_id %s, status 503, GET %s on admin:\n%s", line, err, env.Error.RequestID, req.URL.Path, logs.String())
				}
				// No refusal sends the client to a leader that did not answer.
				if named := rec.Header().Get(HeaderLeader); named != "" {
					t.Fatalf("503 names %q as the leader", named)
				}
				return
			}
			if rec.Body.String() != tc.body {
				t.Fatalf("body %q, want %q", rec.Body, tc.body)
			}
			if len(refused) != 0 {
				t.Fatalf("Refused told %v of an answered request", refused)
			}
			if tc.body != "local" && seen.Get(HeaderForwardedBy) != "self" {
				t.Fatalf("forwarded request lacks %s: %v", HeaderForwardedBy, seen)
			}
			// Only a forwarded answer names the leader: the client then knows
			// where its next request is served without a hop.
			want := ""
			if tc.body != "local" {
				want = leader.URL
			}
			if got := rec.Header().Get(HeaderLeader); got != want {
				t.Fatalf("%s = %q, want %q", HeaderLeader, got, want)
			}
		})
	}
}

// TestForwarderCopiesLargeAnswersThroughPooledBuffers: answers several times
// the proxy's copy buffer arrive whole, request after request, through
// buffers taken from and given back to the pool; a buffer of another size
// is not kept.
func TestForwarderCopiesLargeAnswersThroughPooledBuffers(t *testing.T) {
	body := make([]byte, 3*copyBufferSize+123)
	for i := range body {
		body[i] = byte(i * 7)
	}
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer leader.Close()
	known := members{"L": {ID: "L", PublicURL: leader.URL, AdminURL: "http://unused", AgentURL: "http://unused"}}
	h := NewForwarder(&fakeNode{leader: "L"}, known, Public, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil).Wrap(http.NotFoundHandler())
	for i := range 5 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/videos", nil))
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), body) {
			t.Fatalf("request %d: status %d, %d bytes, want %d bytes as sent", i, rec.Code, rec.Body.Len(), len(body))
		}
	}
	var pool copyBuffers
	if b := pool.Get(); len(b) != copyBufferSize {
		t.Fatalf("a pooled buffer of %d bytes, want %d", len(b), copyBufferSize)
	}
	pool.Put(make([]byte, 10)) // not kept: the next Get is still full size
	if b := pool.Get(); len(b) != copyBufferSize {
		t.Fatalf("after a foreign buffer was put back, a buffer of %d bytes", len(b))
	}
}

// TestForwarderReusesCopyBuffers: forwarding an answer allocates at least
// half a copy buffer less than the same forwarder whose proxy makes its own
// buffer for every answer, as httputil.ReverseProxy does without a pool.
// Bytes, not time: the figure does not move with the machine's load. (The
// race detector makes sync.Pool drop some of what it is given, so the
// pooled side is not free of buffers there either.)
func TestForwarderReusesCopyBuffers(t *testing.T) {
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer leader.Close()
	known := members{"L": {ID: "L", PublicURL: leader.URL, AdminURL: "http://unused", AgentURL: "http://unused"}}
	perRequest := func(f *Forwarder) uint64 {
		h := f.Wrap(http.NotFoundHandler())
		const n = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/videos", nil))
			if rec.Code != 200 || rec.Body.String() != "ok" {
				t.Fatalf("forwarded: %d %q", rec.Code, rec.Body)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / n
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	unpooled := NewForwarder(&fakeNode{leader: "L"}, known, Public, logger, nil, nil)
	unpooled.proxy.BufferPool = nil
	without := perRequest(unpooled)
	with := perRequest(NewForwarder(&fakeNode{leader: "L"}, known, Public, logger, nil, nil))
	if with+copyBufferSize/2 > without {
		t.Fatalf("a forwarded answer allocates %d bytes with the pool, %d without: want at least %d fewer", with, without, copyBufferSize/2)
	}
	t.Logf("bytes allocated per forwarded answer: %d with the pool, %d without", with, without)
}
