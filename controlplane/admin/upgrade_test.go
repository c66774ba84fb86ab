package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// gatedNode refuses every proposal as the upgrade gate does.
type gatedNode struct{ err error }

func (g gatedNode) Apply(context.Context, fsm.Command) (any, error) { return nil, g.err }
func (gatedNode) Snapshot() error                                   { return nil }
func (gatedNode) Stats() map[string]string                          { return map[string]string{} }

var _ Node = gatedNode{}

// A command the gate refuses answers 503, retryable, with the members to
// upgrade and what each understands, whichever way the error was wrapped.
func TestUpgradePendingEnvelope(t *testing.T) {
	refusal := &raftnode.NotUnderstoodError{Type: fsm.SweepIntermediatesType,
		Members: []fsm.ServerLevel{{ID: "n1", Level: fsm.ExpireSpeechType}, {ID: "n4", Level: 0}}}
	h := Handler(Config{Token: "tok", FSM: fsm.New(), Node: gatedNode{fmt.Errorf("apply: %w", refusal)},
		Gatherer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r := httptest.NewRequest(http.MethodPost, "/admin/v1/accounts", strings.NewReader(`{"name":"a","plan":"pro","credits":1}`))
	r.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var env struct {
		Error struct {
			Code       string `json:"code"`
			Message    string `json:"message"`
			Retryable  bool   `json:"retryable"`
			RetryAfter int    `json:"retry_after_seconds"`
			Details    struct {
				Reason      string `json:"reason"`
				Command     string `json:"command"`
				CommandType int    `json:"command_type"`
				Members     []struct {
					ID          string `json:"id"`
					Understands int    `json:"understands"`
				} `json:"members"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
	}
	e := env.Error
	if e.Code != "internal_error" || !e.Retryable || e.RetryAfter == 0 || e.Details.Reason != "cluster_upgrade_in_progress" ||
		e.Details.Command != "sweep_intermediates" || e.Details.CommandType != 51 || len(e.Details.Members) != 2 ||
		e.Details.Members[0].ID != "n1" || e.Details.Members[0].Understands != 49 || e.Details.Members[1].ID != "n4" ||
		e.Details.Members[1].Understands != 0 || !strings.Contains(e.Message, "n1 (understands up to 49)") {
		t.Fatalf("envelope %s", rec.Body)
	}
}

// levelNode applies to f what a cluster whose lowest level is level
// understands, and refuses the rest as the gate does.
type levelNode struct {
	f     *fsm.FSM
	level fsm.MessageType
}

func (n levelNode) Apply(_ context.Context, c fsm.Command) (any, error) {
	if c.Type() > n.level {
		return nil, &raftnode.NotUnderstoodError{Type: c.Type(), Members: []fsm.ServerLevel{{ID: "n2", Level: n.level}}}
	}
	return n.f.ApplyCommand(c)
}
func (levelNode) Snapshot() error          { return nil }
func (levelNode) Stats() map[string]string { return map[string]string{} }

// Mid-upgrade, an account creation with an idempotency key is refused with
// the retryable 503 and opens nothing, and one without a key opens an
// account as before; once every member understands keyed creation, the
// key is honoured.
func TestAccountCreationMidUpgrade(t *testing.T) {
	f := fsm.New()
	post := func(level fsm.MessageType, body string) *httptest.ResponseRecorder {
		t.Helper()
		h := Handler(Config{Token: "tok", FSM: f, Node: levelNode{f, level},
			Gatherer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		r := httptest.NewRequest(http.MethodPost, "/admin/v1/accounts", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	const keyed = `{"name":"a","plan":"pro","credits":1,"idempotency_key":"signup-1"}`
	rec := post(fsm.CreateAccountOnceType-1, keyed)
	var env struct {
		Error struct {
			Retryable bool `json:"retryable"`
			Details   struct {
				Reason  string `json:"reason"`
				Command string `json:"command"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusServiceUnavailable || !env.Error.Retryable ||
		env.Error.Details.Reason != "cluster_upgrade_in_progress" || env.Error.Details.Command != "create_account_once" {
		t.Fatalf("keyed creation mid-upgrade: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if n := f.Stats().Accounts; n != 0 {
		t.Fatalf("a refused keyed creation opened %d accounts", n)
	}
	if rec := post(fsm.CreateAccountOnceType-1, `{"name":"a","plan":"pro","credits":1}`); rec.Code != http.StatusCreated || f.Stats().Accounts != 1 {
		t.Fatalf("creation without a key mid-upgrade: %d %s", rec.Code, rec.Body)
	}
	for i, replayed := range []string{"", "true"} {
		if rec := post(fsm.CreateAccountOnceType, keyed); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != replayed || f.Stats().Accounts != 2 {
			t.Fatalf("keyed creation #%d after the upgrade: %d %v %s", i+1, rec.Code, rec.Header(), rec.Body)
		}
	}
}
