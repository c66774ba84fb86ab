package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

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
	AddVoter(ctx context.Context, id, addr string) error
	RemoveServer(ctx context.Context, id string) error
	Restore(ctx context.Context, r io.Reader, size int64) error
}

// clusterJoin adds a node as a voter and records its addresses. It runs on the
// leader (followers forward it); adding a node that is already a member with the
// same address is a no-op for Raft, so a joining node may retry freely.
func (s *server) clusterJoin(w http.ResponseWriter, r *http.Request) {
	var req cluster.JoinRequest
	if !decode(w, r, &req) {
		return
	}
	if req.ID == "" || req.RaftAddr == "" {
		apierr.Write(w, r, apierr.Invalid("id", "id and raft_addr are required"))
		return
	}
	for field, u := range map[string]string{"public_url": req.PublicURL, "admin_url": req.AdminURL, "agent_url": req.AgentURL} {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			apierr.Write(w, r, apierr.Invalid(field, "an http(s) URL other nodes can reach is required"))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	if err := s.cfg.Cluster.AddVoter(ctx, req.ID, req.RaftAddr); err != nil {
		s.cfg.Logger.Warn("add voter failed", "node_id", req.ID, "raft_addr", req.RaftAddr, "err", err)
		if errors.Is(err, raftnode.ErrPeerRefused) {
			apierr.Write(w, r, apierr.Invalid("raft_addr", "the cluster cannot talk Raft to "+req.RaftAddr+": "+err.Error()+
				"; the node's --raft-tls-cert must be signed by the cluster's --raft-tls-ca and valid for that address"))
			return
		}
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not add the node: "+err.Error()))
		return
	}
	m := fsm.Member{ID: req.ID, RaftAddr: req.RaftAddr, PublicURL: req.PublicURL, AdminURL: req.AdminURL, AgentURL: req.AgentURL}
	if _, ok := s.apply(w, r, &fsm.SetMember{Member: m, Now: s.cfg.Now().UnixNano()}); !ok {
		return
	}
	s.cfg.Logger.Info("node joined the cluster", "node_id", req.ID, "raft_addr", req.RaftAddr)
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"joined": req.ID})
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
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	if err := s.cfg.Cluster.RemoveServer(ctx, req.ID); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not remove the node: "+err.Error()))
		return
	}
	if _, ok := s.apply(w, r, &fsm.RemoveMember{ID: req.ID, Now: s.cfg.Now().UnixNano()}); !ok {
		return
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
			mj.PublicURL, mj.AdminURL, mj.AgentURL = m.PublicURL, m.AdminURL, m.AgentURL
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
