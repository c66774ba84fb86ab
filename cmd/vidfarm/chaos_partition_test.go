package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// partitioned is a cluster whose Raft and HTTP traffic between nodes runs
// through proxies: a node cut off reaches no other node by any route.
type partitioned struct {
	*chaosCluster
	proxies []*netProxy // Raft, public, admin, agent
}

func newPartitioned(t *testing.T) *partitioned {
	c := newChaosCluster(t, 3)
	pids := func() []int {
		out := make([]int, len(c.nodes))
		for i, n := range c.nodes {
			out[i] = int(n.pid.Load())
		}
		return out
	}
	p := &partitioned{chaosCluster: c}
	for range 4 {
		p.proxies = append(p.proxies, newNetProxy(t, len(c.nodes), pids))
	}
	for i, n := range c.nodes {
		for k, port := range []int{n.raft, n.public, n.admin, n.agent} {
			p.proxies[k].serve(i, port)
		}
		n.advertise = p.proxies[0].addr(i)
	}
	c.extra = func(i int) []string {
		return []string{"--public-url", "http://" + p.proxies[1].addr(i), "--admin-url", "http://" + p.proxies[2].addr(i),
			"--agent-url", "http://" + p.proxies[3].addr(i)}
	}
	return p
}

func (p *partitioned) isolate(i int) {
	for _, x := range p.proxies {
		x.isolate(i)
	}
}

func (p *partitioned) heal() {
	for _, x := range p.proxies {
		x.heal()
	}
}

// retryable503 is the answer a node that cannot reach a quorum must give.
func retryable503(r chaosAnswer) bool {
	e, _ := r.body["error"].(map[string]any)
	return r.err == nil && r.status == http.StatusServiceUnavailable && e["retryable"] == true
}

// One node at a time is cut off from the other two, first the leader, then a
// follower (which still believes in the leader and would forward to it). The
// cut-off node refuses writes with a retryable 503 and never acknowledges
// one, while the majority keeps (or elects) a leader and takes writes; once
// healed, the cut-off node catches up.
func TestChaosPartition(t *testing.T) {
	p := newPartitioned(t)
	p.startAll()
	leader := p.waitLeader(30*time.Second, p.nodes...)
	a, err := p.nodes[leader].adminClient().CreateAccount(context.Background(), "partition", "pro", 100*chaosCost)
	if err != nil {
		t.Fatal(err)
	}
	attempt := 0
	create := func(n *chaosNode, what string) chaosAnswer {
		attempt++
		key := fmt.Sprintf("%s-%d", what, attempt)
		return chaosDo(http.MethodPost, n.publicURL()+"/v1/videos", a.APIKey, manualBody("partition "+key, ""), "Idempotency-Key", key)
	}
	if r := create(p.nodes[leader], "before"); r.status != http.StatusCreated {
		t.Fatalf("create before the partition: %d %v %v", r.status, r.err, r.body)
	}
	acked := 1
	for _, role := range []string{"leader", "follower"} {
		leader = p.waitLeader(60*time.Second, p.nodes...)
		cut := leader
		if role == "follower" {
			cut = (leader + 1) % len(p.nodes)
		}
		minority := p.nodes[cut]
		termBefore := p.maxTerm()
		var majority []*chaosNode
		for i, n := range p.nodes {
			if i != cut {
				majority = append(majority, n)
			}
		}
		p.isolate(cut)
		t.Logf("%s %s cut off from the other two", role, minority.id)
		// A cut-off leader may hold a write until it notices it lost its
		// quorum; from then on every write must be refused as retryable.
		eventually(t, 30*time.Second, "the cut-off node to refuse writes with a retryable 503", func() bool {
			r := create(minority, "minority")
			if r.status == http.StatusCreated {
				t.Fatalf("the cut-off %s acknowledged a write: %v", role, r.body)
			}
			return retryable503(r)
		})
		newLeader := p.waitLeader(30*time.Second, majority...)
		t.Logf("the majority's leader is %s", p.nodes[newLeader].id)
		for i := range 5 {
			if r := create(majority[i%2], "majority"); r.status != http.StatusCreated {
				t.Fatalf("majority create: %d %v %v", r.status, r.err, r.body)
			}
			acked++
			if r := create(minority, "minority"); !retryable503(r) {
				t.Fatalf("the cut-off %s answered a write with %d %v %v, want a retryable 503", role, r.status, r.err, r.body)
			}
		}
		if role == "follower" {
			// Long enough for the cut-off follower to give up on its leader
			// and stand for election, which is what pre-vote must contain.
			eventually(t, 30*time.Second, "the cut-off follower to stand for election", func() bool {
				st, err := p.status(minority)
				return err == nil && st.State == "candidate"
			})
		}
		p.heal()
		t.Logf("partition of %s healed", minority.id)
		healed := p.waitLeader(60*time.Second, p.nodes...)
		p.waitSameApplied(60 * time.Second)
		// Pre-vote: a follower cut off from the leader asks whether it could
		// win before it raises its term, so it comes back on the old term and
		// the leader it was cut off from keeps leading.
		if role == "follower" {
			if healed != newLeader {
				t.Errorf("the healed follower %s deposed leader %s (now %s): pre-vote is off", minority.id, p.nodes[newLeader].id, p.nodes[healed].id)
			}
			if after := p.maxTerm(); after != termBefore {
				t.Errorf("the term went from %d to %d while a follower was cut off: pre-vote is off", termBefore, after)
			}
		}
	}
	// The cut-off nodes' writes were never acknowledged and must not have
	// happened: the account holds exactly the acknowledged creates.
	list := chaosGet(t, p.chaosCluster, a.APIKey, "/v1/videos?limit=100")
	if int(num(list, "total")) != acked {
		t.Errorf("after healing the account holds %v videos, want the %d acknowledged: %v", list["total"], acked, list["data"])
	}
	want := int64(100-acked) * chaosCost
	for _, n := range p.nodes {
		r := chaosDo(http.MethodGet, n.publicURL()+"/v1/me", a.APIKey, "")
		if r.err != nil || r.status != http.StatusOK || int64(num(r.body, "credits")) != want {
			t.Errorf("GET /v1/me on %s after healing: %d %v credits %v, want %d", n.id, r.status, r.err, r.body["credits"], want)
		}
	}
}
