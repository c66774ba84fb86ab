package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
)

// TestFollowsLeader: a client given the members of a cluster moves its calls
// to the leader a forwarded answer names, never to an address it was not
// given, and back to its base URL when the leader stops answering.
func TestFollowsLeader(t *testing.T) {
	member := func(hits *atomic.Int64, leader *string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			if *leader != "" {
				w.Header().Set(cluster.HeaderLeader, *leader) // the forwarder's own name for it
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"account","id":"acct_1"}`))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	me := func(t *testing.T, c *client.Client, n int) {
		t.Helper()
		for range n {
			if _, err := c.Me(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	var leaderHits, followerHits atomic.Int64
	none := ""
	leader := member(&leaderHits, &none)
	named := leader.URL + "/" // a trailing slash names the same member
	follower := member(&followerHits, &named)

	t.Run("to a member it was given", func(t *testing.T) {
		leaderHits.Store(0)
		followerHits.Store(0)
		me(t, newTestClient(t, follower.URL, client.WithMembers(leader.URL)), 5)
		if followerHits.Load() != 1 || leaderHits.Load() != 4 {
			t.Fatalf("follower %d calls, leader %d: want 1 and 4", followerHits.Load(), leaderHits.Load())
		}
	})
	t.Run("not without the members", func(t *testing.T) {
		leaderHits.Store(0)
		followerHits.Store(0)
		me(t, newTestClient(t, follower.URL), 5)
		if followerHits.Load() != 5 || leaderHits.Load() != 0 {
			t.Fatalf("follower %d calls, leader %d: want 5 and 0", followerHits.Load(), leaderHits.Load())
		}
	})
	t.Run("not to an address it does not know", func(t *testing.T) {
		var otherHits atomic.Int64
		other := member(&otherHits, &none)
		stranger := other.URL
		var hits atomic.Int64
		lying := member(&hits, &stranger)
		me(t, newTestClient(t, lying.URL, client.WithMembers(leader.URL)), 3)
		if hits.Load() != 3 || otherHits.Load() != 0 {
			t.Fatalf("named member %d calls, unknown address %d: want 3 and 0", hits.Load(), otherHits.Load())
		}
	})
	t.Run("back to its base URL when the leader is gone", func(t *testing.T) {
		var goneHits, hits atomic.Int64
		gone := member(&goneHits, &none)
		goneURL := gone.URL
		f := member(&hits, &goneURL)
		c := newTestClient(t, f.URL, client.WithMembers(goneURL))
		me(t, c, 1)
		gone.Close()
		// The call fails at the leader, goes back to the base URL and is
		// answered there on its retry.
		me(t, c, 1)
		if hits.Load() != 2 || goneHits.Load() != 0 {
			t.Fatalf("base %d calls, gone leader %d: want 2 and 0", hits.Load(), goneHits.Load())
		}
	})
	t.Run("a member URL that is not one", func(t *testing.T) {
		if _, err := client.New(follower.URL, "vf_test_key", client.WithMembers("ftp://x")); err == nil {
			t.Fatal("New took ftp://x as a member")
		}
	})
}
