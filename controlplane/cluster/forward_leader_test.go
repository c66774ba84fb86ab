package cluster

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// movingNode is a follower whose leader the test changes while requests run.
type movingNode struct {
	mu     sync.Mutex
	leader string
}

func (m *movingNode) ID() string                         { return "self" }
func (m *movingNode) IsLeader() bool                     { return false }
func (m *movingNode) VerifyLeader(context.Context) error { return nil }
func (m *movingNode) Removed() ([]string, bool)          { return nil, false }
func (m *movingNode) Leader() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader, ""
}
func (m *movingNode) set(id string) {
	m.mu.Lock()
	m.leader = id
	m.mu.Unlock()
}

// TestForwardToAFrozenLeaderEndsWithTheLeadership: a leader that takes a
// forwarded request and never answers (a paused process) holds it only
// until this node learns of another leader; then the caller gets the
// retryable 503, while a forward to the leader that still leads goes on.
func TestForwardToAFrozenLeaderEndsWithTheLeadership(t *testing.T) {
	arrived := make(chan string, 2)
	// Each node its own release: the old one's handler may still be
	// waiting (it learns of the closed connection a moment later).
	releaseOld, releaseNext := make(chan struct{}), make(chan struct{})
	defer close(releaseOld)
	defer close(releaseNext)
	frozen := func(name string, release chan struct{}) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/admin/v1/warm" {
				return // answered at once: leaves a connection for the next call
			}
			arrived <- name
			select {
			case <-release:
				_, _ = io.WriteString(w, "answered by "+name)
			case <-r.Context().Done():
			}
		}))
	}
	old, next := frozen("old", releaseOld), frozen("next", releaseNext)
	defer old.Close()
	defer next.Close()
	node := &movingNode{leader: "old"}
	known := members{"old": {ID: "old", AdminURL: old.URL}, "next": {ID: "next", AdminURL: next.URL}}
	fw := NewForwarder(node, known, Admin, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	srv := httptest.NewServer(fw.Wrap(http.NotFoundHandler()))
	defer srv.Close()

	type answer struct {
		status int
		body   string
	}
	call := func(path string) chan answer {
		out := make(chan answer, 1)
		go func() {
			res, err := http.Get(srv.URL + path)
			if err != nil {
				out <- answer{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			out <- answer{res.StatusCode, string(b)}
		}()
		return out
	}
	// The held call goes over a connection used before: a GET the
	// transport may replay on a new one once LeaderIs closed it, which
	// must not go back to the old leader.
	if a := <-call("/admin/v1/warm"); a.status != http.StatusOK {
		t.Fatalf("warm-up: %d %s", a.status, a.body)
	}
	first := call("/admin/v1/accounts/a")
	if got := <-arrived; got != "old" {
		t.Fatalf("the first call reached %s", got)
	}
	node.set("next")
	second := call("/admin/v1/accounts/a")
	if got := <-arrived; got != "next" {
		t.Fatalf("the second call reached %s", got)
	}
	fw.LeaderIs("next")
	a := <-first
	var env struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.body), &env); err != nil || a.status != http.StatusServiceUnavailable ||
		env.Error.Code != "upstream_error" || !env.Error.Retryable || !strings.Contains(env.Error.Message, "the leader changed") {
		t.Fatalf("the call held by the old leader: %d %s", a.status, a.body)
	}
	select {
	case a := <-second:
		t.Fatalf("the call to the leader that still leads ended: %d %s", a.status, a.body)
	default:
	}
	releaseNext <- struct{}{}
	if a := <-second; a.status != http.StatusOK || a.body != "answered by next" {
		t.Fatalf("the call to the new leader: %d %s", a.status, a.body)
	}
}
