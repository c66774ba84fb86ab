package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/members"
)

// TestClosedLoopsSpreadOverEndpoints runs both closed loops against three
// loopback servers and checks that every one got the requests of its own
// workers (three workers each of six), on the path the loop speaks.
func TestClosedLoopsSpreadOverEndpoints(t *testing.T) {
	for _, c := range []struct {
		name, path string
		run        func(endpoints []string) (CreateReport, error)
	}{
		{"create", "/v1/videos", func(eps []string) (CreateReport, error) {
			return RunCreate(context.Background(), CreateConfig{BaseURLs: eps, APIKeys: []string{"k"}, Concurrency: 6, Duration: 300 * time.Millisecond})
		}},
		{"etcd", "/v3/kv/put", func(eps []string) (CreateReport, error) {
			return RunEtcdPut(context.Background(), EtcdConfig{Endpoints: eps, Concurrency: 6, Duration: 300 * time.Millisecond, ValueBytes: 8})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hits [3]atomic.Int64
			var eps []string
			for i := range hits {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != c.path {
						t.Errorf("request to %s, want %s", r.URL.Path, c.path)
					}
					hits[i].Add(1)
					if c.path == "/v1/videos" {
						w.WriteHeader(http.StatusCreated)
					}
				}))
				defer srv.Close()
				eps = append(eps, srv.URL+"/")
			}
			rep, err := c.run(eps)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for i := range hits {
				if hits[i].Load() == 0 {
					t.Errorf("endpoint %d got no requests", i)
				}
				sum += hits[i].Load()
			}
			// A request cut off by the end of the run reached a server
			// but is not counted: at most one per worker.
			if rep.Created == 0 || len(rep.Failures) != 0 || sum < rep.Requests || sum > rep.Requests+6 {
				t.Fatalf("servers saw %d requests, report %+v", sum, rep)
			}
		})
	}
}

// TestRunCreateFollowsLeader: three loopback servers of which the second
// and third answer as followers do, naming the first as the leader. With
// FollowLeader each worker sends one create to its follower and the rest to
// the leader; without, every worker stays on its own server. A name that is
// not one of the endpoints is not followed, and a worker whose leader stops
// answering goes back to its own server.
func TestRunCreateFollowsLeader(t *testing.T) {
	const workers = 6
	start := func(t *testing.T, leaderHint func(eps []string) string) ([]string, *[3]atomic.Int64, []*httptest.Server) {
		var hits [3]atomic.Int64
		var eps []string
		var srvs []*httptest.Server
		for i := range hits {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits[i].Add(1)
				if i > 0 {
					w.Header().Set(members.HeaderLeader, leaderHint(eps))
				}
				w.WriteHeader(http.StatusCreated)
			}))
			t.Cleanup(srv.Close)
			eps = append(eps, srv.URL)
			srvs = append(srvs, srv)
		}
		return eps, &hits, srvs
	}
	run := func(t *testing.T, eps []string, follow bool) CreateReport {
		rep, err := RunCreate(context.Background(), CreateConfig{BaseURLs: eps, APIKeys: []string{"k"}, Concurrency: workers,
			Duration: 300 * time.Millisecond, FollowLeader: follow})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := func(eps []string) string { return eps[0] + "/" }

	t.Run("follows", func(t *testing.T) {
		eps, hits, _ := start(t, first)
		rep := run(t, eps, true)
		// Two workers start on each follower: one create each, then the
		// leader (a create cut off by the end of the run is not counted).
		if f := hits[1].Load() + hits[2].Load(); f > 2*workers/3 || rep.Created < 20 || len(rep.Failures) != 0 {
			t.Fatalf("the followers took %d creates with FollowLeader (want at most %d), report %+v", f, 2*workers/3, rep)
		}
	})
	t.Run("stays without FollowLeader", func(t *testing.T) {
		eps, hits, _ := start(t, first)
		run(t, eps, false)
		if hits[1].Load() < 10 || hits[2].Load() < 10 {
			t.Fatalf("followers took %d and %d creates without FollowLeader: the workers moved", hits[1].Load(), hits[2].Load())
		}
	})
	t.Run("a leader it does not know", func(t *testing.T) {
		eps, hits, _ := start(t, func([]string) string { return "http://127.0.0.1:1" })
		run(t, eps, true)
		if hits[1].Load() < 10 || hits[2].Load() < 10 {
			t.Fatalf("followers took %d and %d creates: a worker followed a leader outside its endpoints", hits[1].Load(), hits[2].Load())
		}
	})
	t.Run("back home when the leader is gone", func(t *testing.T) {
		eps, hits, srvs := start(t, first)
		srvs[0].Close()
		rep := run(t, eps, true)
		// Each follower's workers alternate: a create there, a refused
		// connection at the leader, home again.
		if hits[1].Load() < 10 || hits[2].Load() < 10 || rep.Created == 0 || len(rep.Failures) == 0 {
			t.Fatalf("followers took %d and %d creates, report %+v: workers did not come back from a dead leader", hits[1].Load(), hits[2].Load(), rep)
		}
	})
}
