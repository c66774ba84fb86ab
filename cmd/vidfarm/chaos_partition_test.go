package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The cluster's Raft traffic runs through a proxy; the leader is cut off from
// the other two. The old leader (the minority) refuses writes with a
// retryable 503 and never acknowledges one, while the majority elects a
// leader and takes writes; once healed, the old leader catches up.
func TestChaosPartition(t *testing.T) {
	var c *chaosCluster
	var proxy *raftProxy
	pids := func() []int {
		out := make([]int, len(c.nodes))
		for i, n := range c.nodes {
			if n.p != nil {
				out[i] = n.p.cmd.Process.Pid
			}
		}
		return out
	}
	proxy = newRaftProxy(t, 3, pids)
	c = newChaosCluster(t, 3, func(i, raftPort int) string {
		proxy.serve(i, raftPort)
		return proxy.addr(i)
	})
	c.startAll()
	old := c.waitLeader(30*time.Second, c.nodes...)
	a, err := c.nodes[old].adminClient().CreateAccount(context.Background(), "partition", "pro", 100*chaosCost)
	if err != nil {
		t.Fatal(err)
	}
	create := func(n *chaosNode, key string) chaosAnswer {
		return chaosDo(http.MethodPost, n.publicURL()+"/v1/videos", a.APIKey, manualBody("partition "+key, ""), "Idempotency-Key", key)
	}
	if r := create(c.nodes[old], "before"); r.status != http.StatusCreated {
		t.Fatalf("create before the partition: %d %v %v", r.status, r.err, r.body)
	}

	proxy.isolate(old)
	t.Logf("leader %s cut off from the other two", c.nodes[old].id)
	minority := c.nodes[old]
	var majority []*chaosNode
	for i, n := range c.nodes {
		if i != old {
			majority = append(majority, n)
		}
	}
	// The minority may first hold a write until it notices it lost its
	// quorum; from then on every write must be refused as retryable.
	attempt := 0
	refused := func(r chaosAnswer) bool {
		e, _ := r.body["error"].(map[string]any)
		return r.err == nil && r.status == http.StatusServiceUnavailable && e["retryable"] == true
	}
	eventually(t, 30*time.Second, "the minority to refuse writes with a retryable 503", func() bool {
		attempt++
		r := create(minority, fmt.Sprintf("minority-%d", attempt))
		if r.status == http.StatusCreated {
			t.Fatalf("the cut-off node acknowledged a write: %v", r.body)
		}
		return refused(r)
	})
	newLeader := c.waitLeader(30*time.Second, majority...)
	t.Logf("majority elected %s", c.nodes[newLeader].id)
	for i := range 5 {
		key := fmt.Sprintf("majority-%d", i)
		if r := create(majority[i%2], key); r.status != http.StatusCreated {
			t.Fatalf("majority create %s: %d %v %v", key, r.status, r.err, r.body)
		}
		attempt++
		if r := create(minority, fmt.Sprintf("minority-%d", attempt)); !refused(r) {
			t.Fatalf("the cut-off node answered a write with %d %v %v, want a retryable 503", r.status, r.err, r.body)
		}
	}

	proxy.heal()
	t.Log("partition healed")
	c.waitLeader(60*time.Second, c.nodes...)
	c.waitSameApplied(60 * time.Second)
	// The minority's writes were never acknowledged and must not have
	// happened: the account holds the create from before and the majority's.
	list := chaosGet(t, c, a.APIKey, "/v1/videos?limit=100")
	if num(list, "total") != 6 {
		t.Errorf("after healing the account holds %v videos, want 6 (1 before, 5 on the majority): %v", list["total"], list["data"])
	}
	for _, n := range c.nodes {
		r := chaosDo(http.MethodGet, n.publicURL()+"/v1/me", a.APIKey, "")
		if r.err != nil || r.status != http.StatusOK || int64(num(r.body, "credits")) != 94*chaosCost {
			t.Errorf("GET /v1/me on %s after healing: %d %v credits %v, want %d", n.id, r.status, r.err, r.body["credits"], 94*chaosCost)
		}
	}
}
