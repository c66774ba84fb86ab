package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// logBuffer collects a node's JSON log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines whose msg is msg.
func (l *logBuffer) lines(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func withLog(l *logBuffer) option {
	return func(c *server.Config) { c.Logger = slog.New(slog.NewJSONHandler(l, nil)) }
}

// TestMembersRecordWhatTheyUnderstand: joining records a node's level;
// a follower whose record says something else (as after it restarted on
// another binary) reports itself to the leader until the record is right;
// the report endpoint takes only a member at its own Raft address; and a
// node older than every member cannot join.
func TestMembersRecordWhatTheyUnderstand(t *testing.T) {
	logs := map[string]*logBuffer{"n1": {}, "n2": {}}
	n1 := start(t, withLog(logs["n1"]), func(c *server.Config) { c.NodeID = "n1" })
	n2 := start(t, withLog(logs["n2"]), func(c *server.Config) { c.NodeID, c.Join = "n2", "http://"+n1.srv.AdminAddr() })
	nodes := map[string]*harness{"n1": n1, "n2": n2}
	ctx := context.Background()
	level := uint8(fsm.Understood())

	var m admin.ClusterMembers
	waitShowing(t, "both members listed with their level", 20*time.Second, func() (bool, any) {
		var err error
		m, err = n2.admin.ClusterMembers(ctx)
		ok := err == nil && len(m.Members) == 2 && nodes[m.Leader] != nil
		for _, mm := range m.Members {
			ok = ok && mm.Understands == level
		}
		return ok, []any{m, err}
	})
	var st admin.ClusterStatus
	if raw, err := n2.admin.ClusterStatus(ctx); err != nil || json.Unmarshal(raw, &st) != nil || st.Understands != level {
		t.Fatalf("n2's status %s (%v): want understands %d", raw, err, level)
	}
	leader, follower := nodes[m.Leader], n1
	if leader == n1 {
		follower = n2
	}
	fid := follower.cfg.NodeID
	rec, _ := leader.srv.Node.FSM.Member(fid)
	report := cluster.JoinRequest{ID: fid, RaftAddr: rec.RaftAddr, PublicURL: rec.PublicURL, AdminURL: rec.AdminURL,
		AgentURL: rec.AgentURL, Understands: uint8(fsm.ExpireSpeechType)}

	// The state says the follower runs an older binary: it sees that and
	// reports its own level.
	raw, err := leader.admin.Do(ctx, http.MethodPut, cluster.MemberPath+fid, report)
	if err != nil || !strings.Contains(string(raw), `"changed":true`) {
		t.Fatalf("report for %s: %s %v", fid, raw, err)
	}
	// The record is applied before the leader's handler logs it and before
	// the follower has its answer, so both log lines are waited for with it.
	waitShowing(t, "the follower reports its level again, both sides log it", 20*time.Second, func() (bool, any) {
		got, _ := leader.srv.Node.FSM.Member(fid)
		reported := logs[fid].lines("reported this node's record to the leader")
		up := logs[leader.cfg.NodeID].lines("member record updated")
		return got.Understands == fsm.Understood() && len(reported) > 0 && len(up) > 0 && up[len(up)-1]["understands"] == float64(level),
			[]any{got, reported, up}
	})
	// Reporting what the state holds writes nothing.
	report.Understands = level
	if raw, err := leader.admin.Do(ctx, http.MethodPut, cluster.MemberPath+fid, report); err != nil || !strings.Contains(string(raw), `"changed":false`) {
		t.Fatalf("same report: %s %v", raw, err)
	}

	refusals := []struct {
		name   string
		method string
		path   string
		body   cluster.JoinRequest
		status int
		code   string
	}{
		{"not a member", http.MethodPut, cluster.MemberPath + "n9", func() cluster.JoinRequest { r := report; r.ID = "n9"; return r }(),
			http.StatusNotFound, apierr.CodeNotFound},
		{"another id in the body", http.MethodPut, cluster.MemberPath + "n9", report, http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"another raft address", http.MethodPut, cluster.MemberPath + fid, func() cluster.JoinRequest { r := report; r.RaftAddr = "127.0.0.1:1"; return r }(),
			http.StatusConflict, apierr.CodeInvalidRequest},
		{"a level below the membership commands", http.MethodPut, cluster.MemberPath + fid, func() cluster.JoinRequest { r := report; r.Understands = 10; return r }(),
			http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"a node older than the members joins", http.MethodPost, cluster.JoinPath, func() cluster.JoinRequest {
			r := report
			r.ID, r.RaftAddr, r.Understands = "n9", "127.0.0.1:1", uint8(fsm.ExpireSpeechType)
			return r
		}(), http.StatusBadRequest, apierr.CodeInvalidRequest},
		{"a join at an unknown stage", http.MethodPost, cluster.JoinPath, func() cluster.JoinRequest {
			r := report
			r.ID, r.RaftAddr, r.Stage = "n9", "127.0.0.1:1", "observer"
			return r
		}(), http.StatusBadRequest, apierr.CodeInvalidRequest},
	}
	for _, tc := range refusals {
		_, err := follower.admin.Do(ctx, tc.method, tc.path, tc.body) // through the follower: forwarded
		var e *apierr.Error
		if !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code {
			t.Errorf("%s: %v, want %d %s", tc.name, err, tc.status, tc.code)
		} else if strings.Contains(tc.name, "level") || strings.Contains(tc.name, "older") {
			if e.Details["field"] != "understands" {
				t.Errorf("%s: %v, want it refused for its level", tc.name, e)
			}
		}
	}
	if m, err := leader.admin.ClusterMembers(ctx); err != nil || len(m.Members) != 2 {
		t.Fatalf("members after the refusals: %+v %v", m, err)
	}
}

// TestLeaderJobWaitsForTheLastUpgrade: while a member of the configuration
// runs a binary without ResealWebhook (type 50), the leader's reseal job is
// refused by the gate, logs that it is skipped and names the member; the
// moment that member reports a level that has it, the job runs again and
// the secret is sealed. The old member is a non-voter at an address nobody
// listens on: in the configuration, not needed for a commit.
func TestLeaderJobWaitsForTheLastUpgrade(t *testing.T) {
	var logs logBuffer
	h := start(t, withWebhooks(newFakeClock()), withLog(&logs))
	acct, key := h.account("pro", 1000)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	_, secret := h.registerWebhook(key, rc.srv.URL+"/hook")
	stored := func() string { return h.srv.Node.FSM.Webhooks(acct)[0].Secret }
	if stored() != secret {
		t.Fatal("without a key the secret should be kept as it is")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.srv.Node.Raft.AddNonvoter("old", "127.0.0.1:1", 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	old := func(understands fsm.MessageType) *fsm.SetMember {
		return &fsm.SetMember{Member: fsm.Member{ID: "old", RaftAddr: "127.0.0.1:1", PublicURL: "http://old", AdminURL: "http://old:1",
			AgentURL: "http://old:2", Understands: understands}, Now: time.Now().UnixNano()}
	}
	if _, err := h.srv.Node.Apply(ctx, old(fsm.ExpireSpeechType)); err != nil {
		t.Fatal(err)
	}

	// The operator sets a secrets key: the new leader would seal the secret.
	h.cfg.SecretsKey = testSecretsKey
	h.restart()
	waitShowing(t, "the reseal job skipped, naming the old member", 20*time.Second, func() (bool, any) {
		for _, l := range logs.lines("leader job skipped: a member does not understand its command yet") {
			if l["job"] == "reseal_secrets" && l["command"] == "reseal_webhook" && l["command_type"] == float64(fsm.ResealWebhookType) &&
				strings.Contains(l["detail"].(string), "old (understands up to 49)") {
				return true, l
			}
		}
		return false, logs.lines("leader job skipped: a member does not understand its command yet")
	})
	if stored() != secret {
		t.Fatal("the secret was resealed while a member could not apply the command")
	}
	if _, err := h.srv.Node.Apply(ctx, &fsm.ResealWebhook{WebhookID: "wh_x", Old: "a", New: "b", Now: 1}); !errors.Is(err, raftnode.ErrNotUnderstood) {
		t.Fatalf("a direct proposal: %v, want the gate's refusal", err)
	}

	// The member is upgraded and says so: the job runs at once, not on
	// its next minute.
	if _, err := h.srv.Node.Apply(ctx, old(fsm.SweepIntermediatesType)); err != nil {
		t.Fatal(err)
	}
	waitShowing(t, "the secret sealed once every member understands the command", 20*time.Second, func() (bool, any) {
		return sealed.IsSealed(stored()), stored()
	})
	if len(logs.lines("every member understands newer commands: running the jobs that waited for them")) == 0 {
		t.Fatal("the leader did not say why it ran the jobs again")
	}
}
