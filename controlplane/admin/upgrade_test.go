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
