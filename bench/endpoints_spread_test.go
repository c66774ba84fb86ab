package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
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
