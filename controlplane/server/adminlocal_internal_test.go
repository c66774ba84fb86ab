package server

import (
	"net/http/httptest"
	"testing"
)

// A follower answers what describes itself (its metrics, its profiles, its
// view of the cluster) and forwards the rest to the leader.
func TestAdminLocal(t *testing.T) {
	for _, c := range []struct {
		method, path string
		local        bool
	}{
		{"GET", "/metrics", true},
		{"GET", "/debug/pprof/profile?seconds=5", true},
		{"GET", "/debug/pprof/heap", true},
		{"GET", "/admin/v1/cluster/status", true},
		{"GET", "/admin/v1/accounts/acct_1", false},
		{"POST", "/debug/pprof/symbol", false},
		{"POST", "/admin/v1/snapshot", false},
	} {
		if got := adminLocal(httptest.NewRequest(c.method, c.path, nil)); got != c.local {
			t.Errorf("%s %s: local %v, want %v", c.method, c.path, got, c.local)
		}
	}
}
