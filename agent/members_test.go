package agent

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/vidfarm/vidfarm/internal/members"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestAcrossMembers: an agent given a cluster's members whose first
// (Server) is down registers through the next, a follower that forwards to
// the leader and names it, then sends everything else to the leader
// directly and runs a task there; an address a follower names that the
// agent was not given is never called.
func TestAcrossMembers(t *testing.T) {
	t.Parallel()
	leader := newFakeCP(t)
	var strangerHits atomic.Int64
	stranger := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { strangerHits.Add(1) }))
	t.Cleanup(stranger.Close)
	follower := func(names string, hits *atomic.Int64) *httptest.Server {
		u, err := url.Parse(leader.URL())
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(u)
		proxy.ModifyResponse = func(r *http.Response) error {
			r.Header.Set(members.HeaderLeader, names)
			return nil
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var liarHits, followerHits atomic.Int64
	liar := follower(stranger.URL, &liarHits) // names an address the agent was not given
	good := follower(leader.URL()+"/", &followerHits)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // refuses every connection

	cfg := testConfig(t, leader)
	cfg.Server = dead.URL
	cfg.Members = []string{liar.URL, good.URL, leader.URL()}
	startAgent(t, cfg)
	// Refused at Server, the registration goes on to the liar, which
	// forwards it; the agent stays there (the name is not a member) until
	// it gives no answer.
	waitFor(t, "registration through the liar", func() bool { return len(leader.snapshot().registrations) == 1 })
	liar.Close()
	a := assignment("vid_members", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "A lighthouse at dusk", DurationSeconds: 10})
	leader.enqueue(a)
	waitComplete(t, leader, a.TaskID)
	if followerHits.Load() == 0 {
		t.Fatal("the agent never reached the member after the one that went away")
	}
	// After the follower named the leader, every call went there: a few
	// heartbeats later the follower has seen no more.
	seen := followerHits.Load()
	n := len(leader.snapshot().heartbeats)
	waitFor(t, "three more heartbeats", func() bool { return len(leader.snapshot().heartbeats) >= n+3 })
	if followerHits.Load() != seen || seen > 2 {
		t.Fatalf("the follower had %d calls, then %d: the agent did not move to the leader it named", seen, followerHits.Load())
	}
	if strangerHits.Load() != 0 {
		t.Fatalf("the address the liar named got %d calls", strangerHits.Load())
	}
}
