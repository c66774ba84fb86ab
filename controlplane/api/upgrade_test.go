package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// A public request whose command the upgrade gate refuses (a member must
// be upgraded first) answers 503, retryable, saying why without naming
// the control plane's nodes; nothing was written.
func TestUpgradeGateAnswer(t *testing.T) {
	gated := func(next api.Store) api.Store {
		return storeFunc(func(ctx context.Context, cmd fsm.Command) (any, error) {
			if cmd.Type() == fsm.CreateFolderType {
				return nil, &raftnode.NotUnderstoodError{Type: cmd.Type(), Members: []fsm.ServerLevel{{ID: "old-node-7", Level: 49}}}
			}
			return next.Apply(ctx, cmd)
		})
	}
	e := newEnv(t, withStore(gated))
	acct, key := e.account("pro", 10)
	r := e.do(http.MethodPost, "/v1/folders", key, `{"name":"launch"}`)
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("%d %s, want 503", r.Status, r.Body)
	}
	er := r.errorOf(t)
	d, _ := er["details"].(map[string]any)
	if er["code"] != "internal_error" || er["retryable"] != true || d["reason"] != "cluster_upgrade_in_progress" ||
		d["command"] != "create_folder" || strings.Contains(string(r.Body), "old-node-7") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("answer %s %v", r.Body, r.Header)
	}
	if fs := e.node.FSM.Folders(acct); len(fs) != 0 {
		t.Fatalf("folders %+v after a refused create", fs)
	}
}

// gateStore is a store whose upgrade gate refuses one type, as
// raftnode.Node.CheckUnderstood does while a member runs an older binary.
type gateStore struct {
	api.Store
	refuse fsm.MessageType
}

func (g gateStore) CheckUnderstood(t fsm.MessageType) error {
	if t >= g.refuse {
		return &raftnode.NotUnderstoodError{Type: t, Members: []fsm.ServerLevel{{ID: "old", Level: g.refuse - 1}}}
	}
	return nil
}

// A subscription to webhook.disabled waits until every member knows the
// type (an older member's CreateWebhook would refuse it); others go through.
func TestWebhookDisabledSubscriptionWaitsForUpgrade(t *testing.T) {
	e := newEnv(t, withStore(func(next api.Store) api.Store { return gateStore{next, fsm.DisableWebhookType} }))
	_, key := e.account("pro", 10)
	r := e.do(http.MethodPost, "/v1/webhooks", key, `{"url":"https://93.184.215.14/a","events":["webhook.disabled"]}`)
	if er := r.errorOf(t); r.Status != http.StatusServiceUnavailable || er["code"] != "internal_error" {
		t.Fatalf("%d %s, want 503 while a member is older", r.Status, r.Body)
	}
	if r := e.do(http.MethodPost, "/v1/webhooks", key, `{"url":"https://93.184.215.14/b"}`); r.Status != http.StatusCreated {
		t.Fatalf("%d %s, want 201 for the contract's events", r.Status, r.Body)
	}
}
