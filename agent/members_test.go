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
	// follower is a member that forwards to the leader and names names in
	// its answers; hangUp makes it drop the connection, unanswered, of every
	// request but a registration (a member that went away).
	follower := func(names string, hits *atomic.Int64, hangUp bool) *httptest.Server {
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
			if hangUp && r.URL.Path != "/agent/v1/register" {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var liarHits, followerHits atomic.Int64
	// The liar names an address the agent was not given, and goes away
	// after the registration.
	liar := follower(stranger.URL, &liarHits, true)
	good := follower(leader.URL()+"/", &followerHits, false)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // refuses every connection

	cfg := testConfig(t, leader)
	cfg.Server = dead.URL
	cfg.Members = []string{liar.URL, good.URL, leader.URL()}
	startAgent(t, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			r := leader.snapshot()
			t.Logf("leader: %d registrations, %d heartbeats, %d lease asks, leased %v, %d queued; follower %d calls, liar %d",
				len(r.registrations), len(r.heartbeats), r.leaseAsks, r.leased, r.queued, followerHits.Load(), liarHits.Load())
		}
	})
	// Refused at Server, the registration goes on to the liar, which
	// forwards it; the agent stays there (the name is not a member) until
	// it gives no answer, then goes on to the follower that names the
	// leader.
	waitFor(t, "registration through the liar", func() bool { return len(leader.snapshot().registrations) == 1 })
	a := assignment("vid_members", "plan", scheduler.KindPlan, wire.Video{Mode: "auto", Prompt: "A lighthouse at dusk", DurationSeconds: 10})
	leader.enqueue(a)
	waitComplete(t, leader, a.TaskID)
	if followerHits.Load() == 0 {
		t.Fatal("the agent never reached the member after the one that went away")
	}
	// After the follower named the leader, every call went there: a few
	// heartbeats later the follower has seen no more. Before its first
	// answer, each of the agent's concurrent streams of requests (the
	// heartbeat and every worker's long poll) may have reached it once.
	seen := followerHits.Load()
	n := len(leader.snapshot().heartbeats)
	waitFor(t, "three more heartbeats", func() bool { return len(leader.snapshot().heartbeats) >= n+3 })
	if followerHits.Load() != seen || seen > int64(cfg.CPUSlots+cfg.VirtualGPUs+2) {
		t.Fatalf("the follower had %d calls, then %d: the agent did not move to the leader it named", seen, followerHits.Load())
	}
	if liarHits.Load() < 2 {
		t.Fatalf("the liar had %d calls: the agent left it before its registration's answer", liarHits.Load())
	}
	if strangerHits.Load() != 0 {
		t.Fatalf("the address the liar named got %d calls", strangerHits.Load())
	}
}
