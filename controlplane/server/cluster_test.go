package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/blob/s3test"
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

	members := func(h *harness) admin.ClusterMembers {
		m, err := h.admin.ClusterMembers(ctx)
		if err != nil {
			t.Fatalf("cluster members: %v", err)
		}
		return m
	}
	m := members(n3)
	if m.Leader != "n1" || len(m.Members) != 3 {
		t.Fatalf("cluster as n3 sees it: %+v", m)
	}
	for _, mm := range m.Members {
		if mm.Suffrage != "Voter" || mm.PublicURL == "" || mm.AdminURL == "" || mm.AgentURL == "" {
			t.Fatalf("member %+v lacks a vote or an address", mm)
		}
	}

	// One status command shows every node's own view.
	waitShowing(t, "every node reports the same applied index", 20*time.Second, func() (bool, any) {
		all, err := n2.admin.ClusterStatusAll(ctx)
		if err != nil || len(all.Nodes) != 3 || all.Leader != "n1" {
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

	// Admin and public writes through followers reach the leader; reads see them
	// on every node.
	acct, err := n2.admin.CreateAccount(ctx, "through-a-follower", "pro", 1000)
	if err != nil {
		t.Fatalf("create account through n2: %v", err)
	}
	r := n3.do("POST", "/v1/videos", acct.APIKey, manualReq("duration_seconds", 5))
	if r.Status != http.StatusCreated || r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("create through n3: %d %s", r.Status, r.Body)
	}
	first := r.json(t)["id"].(string)
	// A free project's preview still, written to the blob store by the leader n1.
	_, freeKey := n1.account("free", 0)
	preview := n1.create(freeKey, autoReq("duration_seconds", 30))["preview"].(map[string]any)["image_url"].(string)
	for _, h := range []*harness{n1, n2, n3} {
		if got := h.do("GET", "/v1/videos/"+first, acct.APIKey, nil); got.Status != http.StatusOK {
			t.Fatalf("GET the video on %s: %d %s", h.cfg.NodeID, got.Status, got.Body)
		}
	}

	// The leader goes away: a new one is elected and writes go on through any node.
	n1.stop()
	waitUntil(t, "a new leader is elected", 30*time.Second, func() bool {
		l := members(n2).Leader
		return l == "n2" || l == "n3"
	})
	waitUntil(t, "a create through n3 succeeds after failover", 30*time.Second, func() bool {
		return n3.do("POST", "/v1/videos", acct.APIKey, manualReq("duration_seconds", 5)).Status == http.StatusCreated
	})
	for _, h := range []*harness{n2, n3} {
		if got := h.do("GET", "/v1/videos/"+first, acct.APIKey, nil); got.Status != http.StatusOK {
			t.Fatalf("GET the first video on %s after failover: %d %s", h.cfg.NodeID, got.Status, got.Body)
		}
		if got := h.get(strings.Replace(preview, n1.base, h.base, 1)); got.Status != http.StatusOK || got.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("the preview still written by n1, through %s after failover: %d %.200s", h.cfg.NodeID, got.Status, got.Body)
		}
		a, err := h.admin.Account(ctx, acct.AccountID)
		if err != nil || a.Credits >= 1000 {
			t.Fatalf("account on %s after failover: %+v, %v (want two charges)", h.cfg.NodeID, a, err)
		}
	}

	// The dead node is removed through a follower.
	if _, err := n3.admin.RemoveNode(ctx, "n1"); err != nil {
		t.Fatalf("remove n1: %v", err)
	}
	if m := members(n2); len(m.Members) != 2 {
		t.Fatalf("after removing n1: %+v", m)
	}
}
