package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// Cluster is the membership side of the Raft node.
type Cluster interface {
	ID() string
	Leader() (id, raftAddr string)
	Servers() ([]raftnode.Server, error)
	// Levels is what every server of the configuration understands
	// (raftnode.Node.Levels).
	Levels() ([]fsm.ServerLevel, error)
	AddVoter(ctx context.Context, id, addr string) error
	AddNonvoter(ctx context.Context, id, addr string) error
	RemoveServer(ctx context.Context, id string) error
	// Removed reports whether this node was removed from the cluster
	// (raftnode.Node.Removed).
	Removed() (others []string, removed bool)
	// Restore installs a backup whose state had applied index (BackupInfo.Index).
	Restore(ctx context.Context, r io.Reader, size int64, index uint64) error
}

// checkMember refuses a join request or member report that lacks what a
// member record needs.
func checkMember(req cluster.JoinRequest) *apierr.Error {
	if req.ID == "" || req.RaftAddr == "" {
		return apierr.Invalid("id", "id and raft_addr are required")
	}
	for field, u := range map[string]string{"public_url": req.PublicURL, "admin_url": req.AdminURL, "agent_url": req.AgentURL} {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return apierr.Invalid(field, "an http(s) URL other nodes can reach is required")
		}
	}
	if req.Understands != 0 && fsm.MessageType(req.Understands) < fsm.AlwaysUnderstood {
		return apierr.Invalid("understands", fmt.Sprintf("a member understands at least the command types up to %d", fsm.AlwaysUnderstood))
	}
	return nil
}

// memberOf is the record a join request or member report asks for.
func memberOf(req cluster.JoinRequest) fsm.Member {
	return fsm.Member{ID: req.ID, RaftAddr: req.RaftAddr, PublicURL: req.PublicURL, AdminURL: req.AdminURL, AgentURL: req.AgentURL,
		Understands: fsm.MessageType(req.Understands)}
}

// tooOld refuses a node whose binary understands fewer command types than
// every member does: the log and snapshot it would receive may hold types
// it cannot apply (it would panic on them). Nil when it may join.
func (s *server) tooOld(req cluster.JoinRequest) *apierr.Error {
	levels, err := s.cfg.Cluster.Levels()
	if err != nil {
		return apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not read the cluster's configuration: "+err.Error())
	}
	levels = slices.DeleteFunc(levels, func(l fsm.ServerLevel) bool { return l.ID == req.ID })
	joining, low := memberOf(req).Level(), fsm.LowestLevel(levels)
	if joining >= low {
		return nil
	}
	return apierr.Invalid("understands", fmt.Sprintf("node %s understands command types up to %d, every member up to %d and the log may hold them: "+
		"run the release the members run (or a newer one) on it", req.ID, uint8(joining), uint8(low))).
		With("understands", uint8(joining)).With("members_understand", uint8(low))
}

// clusterJoin adds a node, as a nonvoter or a voter (its request's stage;
// see raftnode.Node.AddNonvoter), and records its addresses and level. It
// runs on the leader (followers forward it); adding a node that is already a
// member with the same address is a no-op for Raft, so a joining node may
// retry freely. A node older than every member is refused (tooOld).
func (s *server) clusterJoin(w http.ResponseWriter, r *http.Request) {
	var req cluster.JoinRequest
	if !decode(w, r, &req) {
		return
	}
	if e := checkMember(req); e != nil {
		apierr.Write(w, r, e)
		return
	}
	if e := s.tooOld(req); e != nil {
		s.cfg.Logger.Warn("join refused: the node's binary is older than the members'", "node_id", req.ID, "err", e.Message)
		apierr.Write(w, r, e)
		return
	}
	add := s.cfg.Cluster.AddVoter
	switch req.Stage {
	case cluster.StageNonvoter:
		add = s.cfg.Cluster.AddNonvoter
	case "", cluster.StageVoter:
	default:
		apierr.Write(w, r, apierr.Invalid("stage", fmt.Sprintf("stage %q: want %q (receive the log first) or %q (count for a majority)", req.Stage, cluster.StageNonvoter, cluster.StageVoter)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	if req.Stage == cluster.StageVoter {
		if e := s.promotable(ctx, req); e != nil {
			s.cfg.Logger.Warn("promotion to voter refused", "node_id", req.ID, "raft_addr", req.RaftAddr, "err", e.Message)
			apierr.Write(w, r, e)
			return
		}
	}
	if err := add(ctx, req.ID, req.RaftAddr); err != nil {
		s.cfg.Logger.Warn("add voter failed", "node_id", req.ID, "raft_addr", req.RaftAddr, "err", err)
		if errors.Is(err, raftnode.ErrPeerRefused) {
			apierr.Write(w, r, apierr.Invalid("raft_addr", "the cluster cannot talk Raft to "+req.RaftAddr+": "+err.Error()+
				"; the node's --raft-tls-cert must be signed by the cluster's --raft-tls-ca and valid for that address"))
			return
		}
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not add the node: "+err.Error()))
		return
	}
	m := memberOf(req)
	if _, ok := apply(s, w, r, &fsm.SetMember{Member: m, Now: s.cfg.Now().UnixNano()}); !ok {
		return
	}
	stage := req.Stage
	if stage == "" {
		stage = cluster.StageVoter
	}
	s.cfg.Logger.Info("node joined the cluster", "node_id", req.ID, "raft_addr", req.RaftAddr, "stage", stage, "understands", uint8(m.Level()))
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"joined": req.ID, "stage": stage})
}

// promoteWait bounds how long a promotion waits for a nonvoter to apply
// what the leader had applied when asked: a node that caught up is a few
// entries behind under load, one still receiving a snapshot is minutes.
const promoteWait = 5 * time.Second

// promotable refuses to make req's node a voter unless it is a nonvoter of
// the configuration at the same Raft address and has caught up, by its own
// account: its admin listener answers as that node, follows this leader and
// has applied what this leader had applied when asked. Adding a nonvoter
// checks nothing (no peer is dialled), so a mistyped node is a nonvoter;
// made a voter it would count for every majority and answer none. A node
// that is a voter already passes (a retry whose first answer was lost).
func (s *server) promotable(ctx context.Context, req cluster.JoinRequest) *apierr.Error {
	servers, err := s.cfg.Cluster.Servers()
	if err != nil {
		return apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not read the cluster's configuration: "+err.Error())
	}
	i := slices.IndexFunc(servers, func(sv raftnode.Server) bool { return sv.ID == req.ID })
	if i < 0 {
		ids := make([]string, len(servers))
		for j, sv := range servers {
			ids[j] = sv.ID
		}
		return apierr.New(http.StatusConflict, apierr.CodeInvalidRequest,
			"node "+req.ID+" is not in the cluster's configuration, so it cannot be made a voter: add it as a nonvoter first "+
				"(cluster add without --voter, or start it with --join), and run this again once cluster status shows it caught up").
			With("reason", "not_a_nonvoter").With("members", ids)
	}
	sv := servers[i]
	if sv.RaftAddr != req.RaftAddr {
		return apierr.New(http.StatusConflict, apierr.CodeInvalidRequest,
			fmt.Sprintf("node %s is in the configuration at Raft address %s, not %s: remove it and add it again to move it", req.ID, sv.RaftAddr, req.RaftAddr)).
			With("reason", "other_raft_addr").With("raft_addr", sv.RaftAddr)
	}
	if sv.Suffrage == raftnode.SuffrageVoter {
		return nil
	}
	return s.caughtUp(ctx, req)
}

// caughtUp asks req's node for its own status (what `cluster status` shows
// an operator) until it has applied what this leader had applied now.
func (s *server) caughtUp(ctx context.Context, req cluster.JoinRequest) *apierr.Error {
	want, leader := s.cfg.FSM.AppliedIndex(), s.cfg.Cluster.ID()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = s.cfg.PeerTLS
	defer tr.CloseIdleConnections()
	node := &Client{Server: req.AdminURL, Token: s.cfg.Token, HTTP: &http.Client{Transport: tr}}
	ctx, cancel := context.WithTimeout(ctx, promoteWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	refuse := func(reason, msg string) *apierr.Error {
		return apierr.New(http.StatusConflict, apierr.CodeInvalidRequest, msg).With("reason", reason).With("admin_url", req.AdminURL)
	}
	var last ClusterStatus
	asked := false
	for {
		var st ClusterStatus
		raw, err := node.Do(ctx, http.MethodGet, "/admin/v1/cluster/status", nil)
		if err == nil {
			err = json.Unmarshal(raw, &st)
		}
		switch {
		case err == nil && st.NodeID != req.ID:
			return refuse("other_node", fmt.Sprintf("the admin listener at %s is node %q's, not %s's: give the node's own --admin-url", req.AdminURL, st.NodeID, req.ID)).
				With("answered_node_id", st.NodeID)
		case err == nil && st.LeaderID == leader && st.AppliedIndex >= want:
			return nil
		case err == nil:
			last, asked = st, true
		case !asked || ctx.Err() == nil:
			return refuse("node_unreachable", fmt.Sprintf("could not ask node %s whether it caught up (%v): "+
				"a node that does not answer is not made a voter; check that it runs and that its --admin-url is right, or remove it with cluster remove", req.ID, err))
		}
		if ctx.Err() == nil {
			select {
			case <-tick.C:
				continue
			case <-ctx.Done():
			}
		}
		msg := fmt.Sprintf("node %s has not caught up: it has applied index %d, this leader had applied %d when asked", req.ID, last.AppliedIndex, want)
		if last.LeaderID != leader {
			msg = fmt.Sprintf("node %s does not follow this leader (%s): it names %q as its leader", req.ID, leader, last.LeaderID)
		}
		return refuse("not_caught_up", msg+"; it stays a nonvoter: run this again once cluster status shows its applied index at the leader's "+
			"(a node receiving a large snapshot needs minutes)").
			With("node_applied_index", last.AppliedIndex).With("leader_applied_index", want).With("node_leader_id", last.LeaderID).With("leader_id", leader)
	}
}

// clusterReport records what a member says of itself when the state holds
// something else: a node restarted on a newer (or older) binary, or with
// other URLs. Only a server of Raft's configuration at the address it gives
// may report; the leader answers (followers forward), and an unchanged
// record writes nothing.
func (s *server) clusterReport(w http.ResponseWriter, r *http.Request) {
	var req cluster.JoinRequest
	if !decode(w, r, &req) {
		return
	}
	if id := chi.URLParam(r, "id"); req.ID != id {
		apierr.Write(w, r, apierr.Invalid("id", fmt.Sprintf("the body's id %q is not the path's %q", req.ID, id)))
		return
	}
	if e := checkMember(req); e != nil {
		apierr.Write(w, r, e)
		return
	}
	servers, err := s.cfg.Cluster.Servers()
	if err != nil {
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, err.Error()))
		return
	}
	i := slices.IndexFunc(servers, func(sv raftnode.Server) bool { return sv.ID == req.ID })
	if i < 0 {
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
			"node "+req.ID+" is not a member of the cluster: a new node joins with --join"))
		return
	}
	if servers[i].RaftAddr != req.RaftAddr {
		apierr.Write(w, r, apierr.New(http.StatusConflict, apierr.CodeInvalidRequest,
			fmt.Sprintf("node %s is a member at Raft address %s, not %s: remove it and join it again to move it", req.ID, servers[i].RaftAddr, req.RaftAddr)))
		return
	}
	m := memberOf(req)
	have, had := s.cfg.FSM.Member(req.ID)
	have.Updated = 0
	if had && have == m {
		apierr.WriteJSON(w, http.StatusOK, map[string]any{"member": req.ID, "changed": false})
		return
	}
	if _, ok := apply(s, w, r, &fsm.SetMember{Member: m, Now: s.cfg.Now().UnixNano()}); !ok {
		return
	}
	args := []any{"node_id", req.ID, "understands", uint8(m.Level())}
	if had {
		args = append(args, "understood_before", uint8(have.Level()))
	}
	s.cfg.Logger.Info("member record updated", args...)
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"member": req.ID, "changed": true})
}

func (s *server) clusterRemove(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.ID == "" {
		apierr.Write(w, r, apierr.Invalid("id", "the id of the node to remove is required"))
		return
	}
	servers, err := s.cfg.Cluster.Servers()
	if err != nil {
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not read the cluster's configuration: "+err.Error()))
		return
	}
	i := slices.IndexFunc(servers, func(sv raftnode.Server) bool { return sv.ID == req.ID })
	if i < 0 {
		ids := make([]string, len(servers))
		for j, sv := range servers {
			ids[j] = sv.ID
		}
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound, "node "+req.ID+" is not a member of the cluster").
			With("members", ids))
		return
	}
	voters := 0
	for _, sv := range servers {
		if sv.Suffrage == raftnode.SuffrageVoter {
			voters++
		}
	}
	if voters == 1 && servers[i].Suffrage == raftnode.SuffrageVoter {
		apierr.Write(w, r, apierr.New(http.StatusConflict, apierr.CodeInvalidRequest,
			"node "+req.ID+" is the cluster's only voter: add another node (and let it become a voter) before removing it"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	// This runs on the leader. Removing itself, it steps down once the
	// change commits and can commit nothing after: its member record goes
	// first, while it still leads (a node left in the configuration by a
	// failed removal records itself again when it reports, clusterReport).
	self := req.ID == s.cfg.Cluster.ID()
	if self {
		if _, ok := apply(s, w, r, &fsm.RemoveMember{ID: req.ID, Now: s.cfg.Now().UnixNano()}); !ok {
			return
		}
	}
	if err := s.cfg.Cluster.RemoveServer(ctx, req.ID); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not remove the node: "+err.Error()))
		return
	}
	if !self {
		if _, ok := apply(s, w, r, &fsm.RemoveMember{ID: req.ID, Now: s.cfg.Now().UnixNano()}); !ok {
			return
		}
	}
	s.cfg.Logger.Info("node removed from the cluster", "node_id", req.ID)
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"removed": req.ID})
}

// MemberJSON is one voter with the addresses it published.
type MemberJSON struct {
	ID        string `json:"id"`
	RaftAddr  string `json:"raft_addr"`
	Suffrage  string `json:"suffrage"`
	Leader    bool   `json:"leader"`
	PublicURL string `json:"public_url,omitempty"`
	AdminURL  string `json:"admin_url,omitempty"`
	AgentURL  string `json:"agent_url,omitempty"`
	// Understands is the highest command type the member's binary applies,
	// by its record (absent while it has none).
	Understands uint8 `json:"understands,omitempty"`
}

// ClusterMembers is the cluster as the answering node sees it.
type ClusterMembers struct {
	Node    string       `json:"node"`
	Leader  string       `json:"leader"`
	Members []MemberJSON `json:"members"`
}

func (s *server) clusterMembers(w http.ResponseWriter, r *http.Request) {
	servers, err := s.cfg.Cluster.Servers()
	if err != nil {
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, err.Error()))
		return
	}
	leader, _ := s.cfg.Cluster.Leader()
	out := ClusterMembers{Node: s.cfg.Cluster.ID(), Leader: leader, Members: []MemberJSON{}}
	for _, sv := range servers {
		mj := MemberJSON{ID: sv.ID, RaftAddr: sv.RaftAddr, Suffrage: sv.Suffrage, Leader: sv.ID == leader}
		if m, ok := s.cfg.FSM.Member(sv.ID); ok {
			mj.PublicURL, mj.AdminURL, mj.AgentURL, mj.Understands = m.PublicURL, m.AdminURL, m.AgentURL, uint8(m.Level())
		}
		out.Members = append(out.Members, mj)
	}
	apierr.WriteJSON(w, http.StatusOK, out)
}

// NodeStatus is one member's own view of the cluster, or why it could not be had.
type NodeStatus struct {
	ID       string         `json:"id"`
	AdminURL string         `json:"admin_url"`
	Status   *ClusterStatus `json:"status,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// ClusterOverview is every member's status, asked of each member directly.
type ClusterOverview struct {
	Leader string       `json:"leader"`
	Nodes  []NodeStatus `json:"nodes"`
}

// ClusterStatusAll lists the members through the node the client talks to, then
// asks each member for its own status (leader, state, term, commit and applied
// index, the app-database bridge), so one command shows the whole cluster and a
// node that is down or behind stands out.
func (c *Client) ClusterStatusAll(ctx context.Context) (ClusterOverview, error) {
	m, err := c.ClusterMembers(ctx)
	if err != nil {
		return ClusterOverview{}, err
	}
	out := ClusterOverview{Leader: m.Leader, Nodes: []NodeStatus{}}
	for _, mm := range m.Members {
		ns := NodeStatus{ID: mm.ID, AdminURL: mm.AdminURL}
		if mm.AdminURL == "" {
			ns.Error = "the node has published no admin address"
		} else {
			one := &Client{Server: mm.AdminURL, Token: c.Token, HTTP: c.HTTP}
			var st ClusterStatus
			if err := one.into(ctx, http.MethodGet, "/admin/v1/cluster/status", nil, &st); err != nil {
				ns.Error = err.Error()
			} else {
				ns.Status = &st
			}
		}
		out.Nodes = append(out.Nodes, ns)
	}
	return out, nil
}
