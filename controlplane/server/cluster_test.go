package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/blob/s3test"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	waitShowing(t, what, d, func() (bool, any) { return cond(), nil })
}

// waitShowing polls cond until it holds, and on timeout shows what it saw last.
func waitShowing(t *testing.T, what string, d time.Duration, cond func() (bool, any)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s; last seen: %+v", what, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestThreeNodeClusterForwardsAndFailsOver starts three real nodes on loopback
// (the second and third join through a member's admin listener), drives every
// listener through followers, stops the leader and checks the others carry on.
func TestThreeNodeClusterForwardsAndFailsOver(t *testing.T) {
	// The nodes keep blobs in one S3 bucket (a real S3-compatible server process),
	// so whichever leads serves every file.
	// They share the key that signs file URLs, so a URL made by one verifies on all.
	s3 := s3test.Start(t, "vidfarm-cluster")
	const secret = "00112233445566778899aabbccddeeff"
	n1 := start(t, func(c *server.Config) { c.NodeID, c.BlobS3, c.BlobSecret = "n1", &s3, secret })
	join := "http://" + n1.srv.AdminAddr()
	n2 := start(t, func(c *server.Config) { c.NodeID, c.BlobS3, c.BlobSecret, c.Join = "n2", &s3, secret, join })
	// n3 joins through n2, a follower: the join is forwarded to the leader.
	n3 := start(t, func(c *server.Config) {
		c.NodeID, c.BlobS3, c.BlobSecret, c.Join = "n3", &s3, secret, "http://"+n2.srv.AdminAddr()
	})
	ctx := context.Background()
	nodes := map[string]*harness{"n1": n1, "n2": n2, "n3": n3}

	members := func(h *harness) admin.ClusterMembers {
		m, err := h.admin.ClusterMembers(ctx)
		if err != nil {
			t.Fatalf("cluster members: %v", err)
		}
		return m
	}
	// A joined node is a non-voter until it has caught up and the leader
	// promotes it; n3 learns of its promotion from the log, a moment later.
	waitShowing(t, "n3 sees three voters with their addresses", 20*time.Second, func() (bool, any) {
		m := members(n3)
		if nodes[m.Leader] == nil || len(m.Members) != 3 {
			return false, m
		}
		for _, mm := range m.Members {
			if mm.Suffrage != "Voter" || mm.PublicURL == "" || mm.AdminURL == "" || mm.AgentURL == "" {
				return false, m
			}
		}
		return true, m
	})
	// One status command shows every node's own view.
	waitShowing(t, "every node reports the same applied index", 20*time.Second, func() (bool, any) {
		all, err := n2.admin.ClusterStatusAll(ctx)
		if err != nil || len(all.Nodes) != 3 || nodes[all.Leader] == nil {
			return false, []any{all, err}
		}
		leaders := 0
		for _, n := range all.Nodes {
			if n.Status == nil || n.Status.AppliedIndex != all.Nodes[0].Status.AppliedIndex {
				return false, all
			}
			if n.Status.State == "leader" {
				leaders++
			}
		}
		return leaders == 1, all
	})

	// Each member's /metrics says how many voters it sees, its term (which
	// counts elections) and, on a follower, how long since the leader spoke.
	terms := map[string]float64{}
	for id, h := range nodes {
		waitShowing(t, id+"'s Raft metrics", 20*time.Second, func() (bool, any) {
			page := h.adminGet("/metrics")
			voters, _ := metricSample(page, "vidfarm_raft_voters")
			term, okTerm := metricSample(page, "vidfarm_raft_term")
			contact, okContact := metricSample(page, "vidfarm_raft_last_contact_seconds")
			terms[id] = term
			return voters == 3 && okTerm && term >= 1 && okContact && contact < 10, []float64{voters, term, contact}
		})
	}

	// Writes retry what the contract says is retryable (503 while leadership
	// moves, which a loaded machine makes happen at any time), as clients do;
	// the Idempotency-Key makes a retried create safe.
	write := func(what string, h *harness, key string, body any, headers ...string) response {
		t.Helper()
		var r response
		waitShowing(t, what, 30*time.Second, func() (bool, any) {
			r = h.do("POST", "/v1/videos", key, body, headers...)
			return r.Status != http.StatusServiceUnavailable, string(r.Body)
		})
		return r
	}
	var acct admin.CreatedAccount
	waitShowing(t, "an account is created through n2", 30*time.Second, func() (bool, any) {
		var err error
		acct, err = n2.admin.CreateAccount(ctx, "through-a-follower", "pro", 1000)
		return err == nil, err
	})
	r := write("a create through n3", n3, acct.APIKey, manualReq("duration_seconds", 5), "Idempotency-Key", "first")
	if r.Status != http.StatusCreated || r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("create through n3: %d %s", r.Status, r.Body)
	}
	first := r.json(t)["id"].(string)
	// A free project's preview still, written to the blob store by the leader.
	leader := nodes[members(n3).Leader]
	var free admin.CreatedAccount
	waitShowing(t, "a free account is created", 30*time.Second, func() (bool, any) {
		var err error
		free, err = leader.admin.CreateAccount(ctx, "free", "free", 0)
		return err == nil, err
	})
	freeKey := free.APIKey
	r = write("a free project through the leader", leader, freeKey, autoReq("duration_seconds", 30), "Idempotency-Key", "preview")
	if r.Status != http.StatusCreated {
		t.Fatalf("free project: %d %s", r.Status, r.Body)
	}
	preview := r.json(t)["preview"].(map[string]any)["image_url"].(string)
	// A follower's forwarded answer names the leader's public URL, so a
	// client that knows the members can go there directly; the leader's own
	// answer names none.
	m := members(n3)
	leaderURL := ""
	for _, mm := range m.Members {
		if mm.ID == m.Leader {
			leaderURL = mm.PublicURL
		}
	}
	for _, h := range nodes {
		got := h.do("GET", "/v1/videos/"+first, acct.APIKey, nil)
		if got.Status != http.StatusOK {
			t.Fatalf("GET the video on %s: %d %s", h.cfg.NodeID, got.Status, got.Body)
		}
		want := leaderURL
		if h == leader {
			want = ""
		}
		if named := got.Header.Get(cluster.HeaderLeader); named != want {
			t.Fatalf("GET the video on %s (leader %s): %s = %q, want %q", h.cfg.NodeID, m.Leader, cluster.HeaderLeader, named, want)
		}
	}

	// The leader goes away: a new one is elected and writes go on through any node.
	leader.stop()
	delete(nodes, leader.cfg.NodeID)
	var survivors []*harness
	for _, h := range nodes {
		survivors = append(survivors, h)
	}
	waitUntil(t, "a new leader is elected", 30*time.Second, func() bool {
		return nodes[members(survivors[0]).Leader] != nil
	})
	for _, h := range survivors {
		waitShowing(t, h.cfg.NodeID+"'s term after the election", 20*time.Second, func() (bool, any) {
			term, _ := metricSample(h.adminGet("/metrics"), "vidfarm_raft_term")
			return term > terms[h.cfg.NodeID], term
		})
	}
	if r := write("a create after failover", survivors[1], acct.APIKey, manualReq("duration_seconds", 5), "Idempotency-Key", "second"); r.Status != http.StatusCreated {
		t.Fatalf("create after failover: %d %s", r.Status, r.Body)
	}
	for _, h := range survivors {
		if got := h.do("GET", "/v1/videos/"+first, acct.APIKey, nil); got.Status != http.StatusOK {
			t.Fatalf("GET the first video on %s after failover: %d %s", h.cfg.NodeID, got.Status, got.Body)
		}
		if got := h.get(strings.Replace(preview, leader.base, h.base, 1)); got.Status != http.StatusOK || got.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("the preview still written by %s, through %s after failover: %d %.200s", leader.cfg.NodeID, h.cfg.NodeID, got.Status, got.Body)
		}
		// A busy machine may hold another election in between: "no leader,
		// retry shortly" is the answer then, and a client retries. Only the
		// error is retried: a balance without both charges fails at once.
		waitShowing(t, "the account on "+h.cfg.NodeID+" reads", 30*time.Second, func() (bool, any) {
			a, err := h.admin.Account(ctx, acct.AccountID)
			if err != nil {
				return false, err
			}
			if a.Credits >= 1000 {
				t.Fatalf("account on %s after failover: %+v (want two charges)", h.cfg.NodeID, a)
			}
			return true, a
		})
	}

	// The dead node is removed through any survivor.
	waitShowing(t, "the dead node is removed", 30*time.Second, func() (bool, any) {
		_, err := survivors[1].admin.RemoveNode(ctx, leader.cfg.NodeID)
		return err == nil, err
	})
	if m := members(survivors[0]); len(m.Members) != 2 {
		t.Fatalf("after removing %s: %+v", leader.cfg.NodeID, m)
	}
	// An operator adds a voter by hand (what --join does for a new node); two
	// of three voters are up, so the cluster keeps its quorum.
	back := cluster.JoinRequest{ID: "n4", RaftAddr: "127.0.0.1:1", PublicURL: "http://127.0.0.1:1", AdminURL: "http://127.0.0.1:2", AgentURL: "http://127.0.0.1:3"}
	waitShowing(t, "a voter is added by hand", 30*time.Second, func() (bool, any) {
		_, err := survivors[0].admin.AddNode(ctx, back)
		return err == nil, err
	})
	if m := members(survivors[1]); len(m.Members) != 3 {
		t.Fatalf("after adding n4: %+v", m)
	}
}
