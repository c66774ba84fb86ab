package admin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// fakeCluster is a leader's Raft membership, in memory; n1 leads.
type fakeCluster struct {
	mu       sync.Mutex
	servers  []raftnode.Server
	voters   []string // AddVoter calls, by id
	restored []restoreCall
	// onRestore, when set, sees what Restore is given.
	onRestore func(r io.Reader)
}

type restoreCall struct {
	size  int64
	index uint64
}

var _ Cluster = (*fakeCluster)(nil)

func (c *fakeCluster) ID() string                                 { return "n1" }
func (c *fakeCluster) Leader() (string, string)                   { return "n1", "127.0.0.1:1" }
func (c *fakeCluster) Levels() ([]fsm.ServerLevel, error)         { return nil, nil }
func (c *fakeCluster) Removed() ([]string, bool)                  { return nil, false }
func (c *fakeCluster) RemoveServer(context.Context, string) error { return nil }
func (c *fakeCluster) Servers() ([]raftnode.Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]raftnode.Server(nil), c.servers...), nil
}
func (c *fakeCluster) AddVoter(_ context.Context, id, addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.voters = append(c.voters, id)
	return nil
}
func (c *fakeCluster) AddNonvoter(_ context.Context, id, addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.servers = append(c.servers, raftnode.Server{ID: id, RaftAddr: addr, Suffrage: "Nonvoter"})
	return nil
}
func (c *fakeCluster) Restore(_ context.Context, r io.Reader, size int64, index uint64) error {
	if c.onRestore != nil {
		c.onRestore(r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restored = append(c.restored, restoreCall{size, index})
	return nil
}

func (c *fakeCluster) promoted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.voters...)
}

// applyNode applies commands to its FSM as a leader of one would.
type applyNode struct {
	f     *fsm.FSM
	stats map[string]string
}

func (n applyNode) Apply(_ context.Context, c fsm.Command) (any, error) { return n.f.ApplyCommand(c) }
func (applyNode) Snapshot() error                                       { return nil }
func (n applyNode) Stats() map[string]string                            { return n.stats }

var _ Node = applyNode{}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// leaderHandler is the admin API of n1, whose FSM has applied a few entries.
func leaderHandler(t *testing.T, c Cluster, f *fsm.FSM, stats map[string]string, opts ...func(*Config)) http.Handler {
	t.Helper()
	cfg := Config{Token: "tok", FSM: f, Node: applyNode{f: f, stats: stats}, Cluster: c,
		Gatherer: prometheus.NewRegistry(), Logger: quiet()}
	for _, o := range opts {
		o(&cfg)
	}
	return Handler(cfg)
}

// refusal is an error envelope's fields that a script acts on.
type refusal struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func post(t *testing.T, h http.Handler, path string, body io.Reader) (int, refusal, []byte) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, body)
	r.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var env refusal
	_ = json.Unmarshal(rec.Body.Bytes(), &env)
	return rec.Code, env, rec.Body.Bytes()
}

// statusServer is a node's admin listener answering its own cluster status;
// answer is called with the count of requests so far.
func statusServer(t *testing.T, answer func(n int32) ClusterStatus) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var asked atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v1/cluster/status" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		_ = json.NewEncoder(w).Encode(answer(asked.Add(1)))
	}))
	t.Cleanup(s.Close)
	return s, &asked
}

func leaderFSM(t *testing.T, entries int) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	for i := range entries {
		m := fsm.Member{ID: "n1", RaftAddr: "127.0.0.1:1", PublicURL: "http://p", AdminURL: "http://a", AgentURL: "http://g"}
		if _, err := f.ApplyCommand(&fsm.SetMember{Member: m, Now: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func joinBody(id, raftAddr, adminURL, stage string) io.Reader {
	b, _ := json.Marshal(cluster.JoinRequest{ID: id, RaftAddr: raftAddr, PublicURL: "http://10.0.0.9:8080", AdminURL: adminURL,
		AgentURL: "http://10.0.0.9:8082", Stage: stage})
	return strings.NewReader(string(b))
}

// A voter is made only of a nonvoter, at the address asked, that answers as
// itself and has applied what the leader had: a mistyped node (added as a
// nonvoter, since adding one dials nothing) is refused with what is missing,
// and nothing changes.
func TestPromoteRefusesWhatIsNotACaughtUpNonvoter(t *testing.T) {
	const leaderApplied = 7
	caughtUp := ClusterStatus{NodeID: "n2", LeaderID: "n1", AppliedIndex: leaderApplied}
	cases := []struct {
		name, reason string
		servers      []raftnode.Server
		raftAddr     string
		status       *ClusterStatus // nil: nothing listens at the admin URL
		want         map[string]any
	}{
		{name: "not in the configuration", reason: "not_a_nonvoter", status: &caughtUp},
		{name: "at another Raft address", reason: "other_raft_addr", raftAddr: "10.0.0.9:7001", status: &caughtUp,
			want: map[string]any{"raft_addr": "10.0.0.9:7000"}},
		{name: "a typo: nothing answers", reason: "node_unreachable"},
		{name: "another node answers", reason: "other_node", status: &ClusterStatus{NodeID: "n3", LeaderID: "n1", AppliedIndex: leaderApplied},
			want: map[string]any{"answered_node_id": "n3"}},
		{name: "behind", reason: "not_caught_up", status: &ClusterStatus{NodeID: "n2", LeaderID: "n1", AppliedIndex: 2},
			want: map[string]any{"node_applied_index": float64(2), "leader_applied_index": float64(leaderApplied)}},
		{name: "following no leader", reason: "not_caught_up", status: &ClusterStatus{NodeID: "n2", AppliedIndex: leaderApplied},
			want: map[string]any{"node_leader_id": "", "leader_id": "n1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{servers: []raftnode.Server{{ID: "n1", RaftAddr: "127.0.0.1:1", Suffrage: raftnode.SuffrageVoter}}}
			if tc.reason != "not_a_nonvoter" {
				c.servers = append(c.servers, raftnode.Server{ID: "n2", RaftAddr: "10.0.0.9:7000", Suffrage: "Nonvoter"})
			}
			adminURL := deadURL(t)
			if tc.status != nil {
				s, _ := statusServer(t, func(int32) ClusterStatus { return *tc.status })
				adminURL = s.URL
			}
			raftAddr := "10.0.0.9:7000"
			if tc.raftAddr != "" {
				raftAddr = tc.raftAddr
			}
			f := leaderFSM(t, leaderApplied)
			code, env, raw := post(t, leaderHandler(t, c, f, nil), cluster.JoinPath, joinBody("n2", raftAddr, adminURL, cluster.StageVoter))
			if code != http.StatusConflict || env.Error.Code != "invalid_request" || env.Error.Details["reason"] != tc.reason {
				t.Fatalf("promotion: %d %s, want 409 with reason %s", code, raw, tc.reason)
			}
			for k, v := range tc.want {
				if env.Error.Details[k] != v {
					t.Fatalf("details[%s] = %v, want %v: %s", k, env.Error.Details[k], v, raw)
				}
			}
			if got := c.promoted(); len(got) != 0 {
				t.Fatalf("refused, yet AddVoter was called for %v", got)
			}
			if _, ok := f.Member("n2"); ok {
				t.Fatal("a refused promotion recorded the node as a member")
			}
		})
	}
}

// A nonvoter a few entries behind is promoted once it has applied them; one
// already a voter (a retried promotion) passes without being asked.
func TestPromoteWaitsForTheNodeToCatchUp(t *testing.T) {
	const leaderApplied = 5
	s, asked := statusServer(t, func(n int32) ClusterStatus {
		st := ClusterStatus{NodeID: "n2", LeaderID: "n1", AppliedIndex: leaderApplied - 1}
		if n >= 3 {
			st.AppliedIndex = leaderApplied
		}
		return st
	})
	c := &fakeCluster{servers: []raftnode.Server{{ID: "n1", RaftAddr: "127.0.0.1:1", Suffrage: raftnode.SuffrageVoter},
		{ID: "n2", RaftAddr: "10.0.0.9:7000", Suffrage: "Nonvoter"}}}
	h := leaderHandler(t, c, leaderFSM(t, leaderApplied), nil)
	if code, _, raw := post(t, h, cluster.JoinPath, joinBody("n2", "10.0.0.9:7000", s.URL, cluster.StageVoter)); code != http.StatusOK {
		t.Fatalf("promotion of a node catching up: %d %s", code, raw)
	}
	if got := c.promoted(); len(got) != 1 || got[0] != "n2" {
		t.Fatalf("AddVoter calls %v, want [n2]", got)
	}
	if n := asked.Load(); n < 3 {
		t.Fatalf("the node was asked %d times, want until it had caught up (3)", n)
	}

	c.servers[1].Suffrage = raftnode.SuffrageVoter
	before := asked.Load()
	if code, _, raw := post(t, h, cluster.JoinPath, joinBody("n2", "10.0.0.9:7000", s.URL, cluster.StageVoter)); code != http.StatusOK {
		t.Fatalf("a retried promotion: %d %s", code, raw)
	}
	if asked.Load() != before {
		t.Fatal("a voter's retried promotion asked the node again")
	}
}
