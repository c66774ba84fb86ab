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
