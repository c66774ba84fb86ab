package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/internal/members"
)

// TestRemovedNodeSaysSo: a follower removed from the cluster never learns
// that its removal committed (the leader stops replicating to it), so it
// has no leader for ever. It answers every request that needs the leader
// with a 503 that says it was removed and names the members left with
// their addresses, not "retry shortly"; and the Go SDK, given the members,
// moves on to one of them by itself instead of retrying the removed node.
func TestRemovedNodeSaysSo(t *testing.T) {
	t.Parallel()
	nodes, leader := threeVoters(t)
	ctx := context.Background()
	_, key := nodes[leader].account("pro", 100)
	var gone *harness
	var left []*harness
	for _, id := range []string{"n1", "n2", "n3"} {
		if h := nodes[id]; gone == nil && id != leader {
			gone = h
		} else {
			left = append(left, h)
		}
	}
	goneID := gone.cfg.NodeID
	waitShowing(t, goneID+" is removed", 30*time.Second, func() (bool, any) {
		out, err := nodes[leader].admin.RemoveNode(ctx, goneID)
		return err == nil, []any{out, err}
	})

	var r response
	waitShowing(t, goneID+" answers that it was removed", 30*time.Second, func() (bool, any) {
		r = gone.do("GET", "/v1/me", key, nil)
		return r.Status == 503 && r.Header.Get(members.HeaderRemoved) == goneID, []any{r.Status, r.Header, string(r.Body)}
	})
	if code := r.errorCode(t); code != "upstream_error" {
		t.Fatalf("code %q, want upstream_error: %s", code, r.Body)
	}
	// Its admin and agent listeners refuse what needs the leader the same way.
	if _, err := gone.admin.CreateAccount(ctx, "refused", "pro", 1); err == nil {
		t.Fatal("the removed node's admin API created an account")
	}
	if r := gone.agentCall("POST", "/agent/v1/heartbeat", "vfn_any", map[string]any{}); r.Status != 503 {
		t.Fatalf("the removed node's agent API answered a heartbeat %d %s, want 503", r.Status, r.Body)
	}
	// The forwarders answered without the handlers they wrap: they counted
	// their 503s in those handlers' request metrics themselves, under the
	// route "forward". The admin API counted the removal on the leader.
	for _, c := range []struct {
		h      *harness
		series string
	}{
		{gone, `vidfarm_api_requests_total{method="GET",route="forward",status="503"}`},
		{gone, `vidfarm_admin_requests_total{method="POST",route="forward",status="503"}`},
		{gone, `vidfarm_agentapi_requests_total{method="POST",route="forward",status="503"}`},
		{nodes[leader], `vidfarm_admin_requests_total{method="POST",route="/admin/v1/cluster/remove",status="200"}`},
	} {
		if v, ok := metricSample(c.h.adminGet("/metrics"), c.series); !ok || v < 1 {
			t.Errorf("%s's /metrics: %s = %v (present %v), want at least 1", c.h.cfg.NodeID, c.series, v, ok)
		}
	}
	e := r.json(t)["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if !strings.Contains(msg, "removed from the cluster") || strings.Contains(msg, "retry shortly") {
		t.Errorf("message %q does not say the node was removed, or still says to retry it", msg)
	}
	d, _ := e["details"].(map[string]any)
	if d["removed"] != true || d["node"] != goneID {
		t.Errorf("details %v: want removed true and node %s", d, goneID)
	}
	listed, _ := d["members"].([]any)
	want := map[string]string{}
	for _, h := range left {
		want[h.cfg.NodeID] = h.base
		if !strings.Contains(msg, h.cfg.NodeID+" at "+h.base) {
			t.Errorf("message %q does not name member %s at %s", msg, h.cfg.NodeID, h.base)
		}
	}
	if len(listed) != len(want) {
		t.Fatalf("details.members %v, want %v", listed, want)
	}
	for _, m := range listed {
		mm, _ := m.(map[string]any)
		if id, _ := mm["id"].(string); want[id] == "" || mm["url"] != want[id] {
			t.Errorf("details.members has %v; want the members left with their public URLs %v", mm, want)
		}
	}

	st, err := gone.admin.ClusterStatus(ctx)
	if err != nil || !strings.Contains(string(st), `"removed":true`) {
		t.Errorf("cluster status of %s: %s, %v; want removed true", goneID, st, err)
	}

	sdk, err := client.New(gone.base, key, client.WithMembers(left[0].base, left[1].base))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdk.Me(ctx); err != nil {
		t.Fatalf("the SDK, given the members, did not move past the removed node: %v", err)
	}

	// A video's event stream, which a member serves from its own state, is
	// refused too: the removed node's state stopped at its removal. The
	// SDK's stream, which makes one attempt, tries the next member on the
	// next one.
	v, err := sdk.CreateAuto(ctx, client.AutoVideoRequest{Mode: "auto", Prompt: "a lighthouse at dusk", DurationSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	r = gone.do("GET", "/v1/videos/"+v.ID+"/events", key, nil)
	if r.Status != 503 || r.Header.Get(members.HeaderRemoved) != goneID {
		t.Fatalf("the removed node's event stream: %d %v %s", r.Status, r.Header, r.Body)
	}
	if _, err := sdk.VideoEvents(ctx, v.ID, ""); err == nil {
		t.Fatal("the SDK's first stream, at the removed node, was served")
	}
	stream, err := sdk.VideoEvents(ctx, v.ID, "")
	if err != nil {
		t.Fatalf("the SDK's next stream did not move past the removed node: %v", err)
	}
	stream.Close()
}
