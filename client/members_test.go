package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
)

// TestFollowsLeader: a client given the members of a cluster moves its calls
// to the leader a forwarded answer names, never to an address it was not
// given, and on to the next member when the one it calls gives no answer;
// event streams move on their own.
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
	t.Run("to the next member when its base URL gives no answer", func(t *testing.T) {
		var deadHits, nextHits, lastHits atomic.Int64
		dead := member(&deadHits, &none)
		dead.Close() // refuses every connection
		next, last := member(&nextHits, &none), member(&lastHits, &none)
		c := newTestClient(t, dead.URL, client.WithMembers(next.URL, last.URL))
		// The first call's first attempt is refused; its retry and every
		// later call go to the next member, not on to the one after it.
		me(t, c, 3)
		if nextHits.Load() != 3 || lastHits.Load() != 0 {
			t.Fatalf("next member %d calls, the one after %d: want 3 and 0", nextHits.Load(), lastHits.Load())
		}
	})
	t.Run("past a leader that is gone to the member after it", func(t *testing.T) {
		var baseHits, goneHits, afterHits atomic.Int64
		gone := member(&goneHits, &none)
		goneURL := gone.URL
		base := member(&baseHits, &goneURL)
		after := member(&afterHits, &none)
		c := newTestClient(t, base.URL, client.WithMembers(goneURL, after.URL))
		me(t, c, 2) // the base URL names the leader; the second call goes there
		gone.Close()
		me(t, c, 2) // refused at the leader: on to the member after it in the order given
		if baseHits.Load() != 1 || goneHits.Load() != 1 || afterHits.Load() != 2 {
			t.Fatalf("base %d, gone leader %d, member after it %d calls: want 1, 1 and 2",
				baseHits.Load(), goneHits.Load(), afterHits.Load())
		}
	})
	t.Run("not when the caller gave up on the call", func(t *testing.T) {
		var slowHits, otherHits atomic.Int64
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if slowHits.Add(1) == 1 {
				<-r.Context().Done() // the first call hangs until the client gives up
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"account","id":"acct_1"}`))
		}))
		t.Cleanup(slow.Close)
		other := member(&otherHits, &none)
		c := newTestClient(t, slow.URL, client.WithMembers(other.URL))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := c.Me(ctx); err == nil {
			t.Fatal("a call past its deadline answered")
		}
		me(t, c, 1) // the base URL is still where calls go
		if slowHits.Load() != 2 || otherHits.Load() != 0 {
			t.Fatalf("base %d calls, other member %d: want 2 and 0", slowHits.Load(), otherHits.Load())
		}
	})
	t.Run("calls stay at the base URL without members", func(t *testing.T) {
		dead := member(new(atomic.Int64), &none)
		dead.Close()
		c, err := client.New(dead.URL, "vf_test_key", client.WithBackoff(time.Millisecond, time.Millisecond), client.WithMaxAttempts(2))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Me(context.Background()); err == nil || !strings.Contains(err.Error(), dead.URL) {
			t.Fatalf("a client of one dead server answered %v; want its refusal, naming %s", err, dead.URL)
		}
	})
	t.Run("an event stream moves on its own", func(t *testing.T) {
		var streamHits, callHits atomic.Int64
		dead := member(new(atomic.Int64), &none)
		dead.Close()
		stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/events") {
				streamHits.Add(1)
				w.WriteHeader(http.StatusNoContent) // the video is final already
				return
			}
			callHits.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"account","id":"acct_1"}`))
		}))
		t.Cleanup(stream.Close)
		c := newTestClient(t, dead.URL, client.WithMembers(stream.URL))
		ctx := context.Background()
		// One attempt each: the first is refused at the base URL, the
		// second goes to the member after it.
		if _, err := c.VideoEvents(ctx, "vid_1", ""); err == nil {
			t.Fatal("a stream from a dead base URL opened")
		}
		if _, err := c.VideoEvents(ctx, "vid_1", ""); !errors.Is(err, client.ErrStreamFinal) {
			t.Fatalf("the second stream: %v, want ErrStreamFinal from the member", err)
		}
		if streamHits.Load() != 1 || callHits.Load() != 0 {
			t.Fatalf("member: %d streams and %d calls, want 1 and 0", streamHits.Load(), callHits.Load())
		}
	})
	t.Run("a member URL that is not one", func(t *testing.T) {
		if _, err := client.New(follower.URL, "vf_test_key", client.WithMembers("ftp://x")); err == nil {
			t.Fatal("New took ftp://x as a member")
		}
	})
}
