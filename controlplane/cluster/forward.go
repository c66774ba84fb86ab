// Package cluster lets a control plane of several nodes behave as one: any node
// takes any public, admin or agent request and a follower forwards it to the
// leader's listener of the same kind; a new node joins an existing cluster
// through any member's admin listener.
//
// Forwarding is whole-request: reads go to the leader too, because a follower's
// FSM may lag behind acknowledged writes and the contract promises that a client
// sees its own writes. A request is forwarded at most once (a header marks it),
// so two nodes that disagree about the leader during an election answer 503
// `upstream_error` (retryable, Retry-After 1) instead of passing it back and
// forth. Long polls and uploads stream through the proxy.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	vfmembers "github.com/vidfarm/vidfarm/internal/members"
)

// HeaderForwardedBy names the node that forwarded a request to the leader.
const HeaderForwardedBy = "X-Vidfarm-Forwarded-By"

// HeaderLeader, on an answer a follower forwarded, is the leader's base URL
// for the listener the request came to. The leader serves every request in
// full, so a client that knows the members can send its next requests there
// and spare the cluster the follower's hop: on three nodes with the clients
// spread over the members that hop cost a third of the cluster's CPU per
// create (docs/benchmarks.md). Clients should follow it only to a URL they
// were given as a member's, never to one they do not know: internal/members,
// which defines the name, does that for the SDK, the agent and the bench.
const HeaderLeader = vfmembers.HeaderLeader

// Listener is which of a node's listeners a request arrived on.
type Listener int

const (
	Public Listener = iota
	Admin
	Agent
)

func (l Listener) String() string {
	return [...]string{"public", "admin", "agent"}[l]
}

// url picks the member's address for this kind of listener.
func (l Listener) url(m fsm.Member) string {
	return [...]string{m.PublicURL, m.AdminURL, m.AgentURL}[l]
}

// Node is what forwarding needs to know of the Raft node.
type Node interface {
	ID() string
	IsLeader() bool
	Leader() (id, raftAddr string)
	// VerifyLeader confirms with a quorum that this node still leads: the
	// read barrier before a read is answered from the leader's state.
	VerifyLeader(ctx context.Context) error
	// Removed reports whether this node was removed from the cluster, with
	// the members it knows (raftnode.Node.Removed).
	Removed() (others []string, removed bool)
}

// Members resolves a node id to its addresses (the FSM does).
type Members interface {
	Member(id string) (fsm.Member, bool)
}

// Forwarder sends requests that arrive on a follower to the leader.
type Forwarder struct {
	Node     Node
	Members  Members
	Listener Listener
	Logger   *slog.Logger
	// Local says which requests this node answers itself even as a follower
	// (its own metrics and status); nil means none.
	Local func(*http.Request) bool
	// Refused, when set, is told of every request the forwarder answered
	// itself with an error (no leader, the leader did not answer, ...),
	// with the status and how long it took. Those requests never reach the
	// handler the forwarder wraps, whose metrics would otherwise miss
	// exactly the 503s of an election. Set it before serving.
	Refused func(r *http.Request, status int, d time.Duration)

	proxy *httputil.ReverseProxy

	conns *peerConns
}

// LeaderIs tells the forwarder who leads now (empty: nobody known). The
// connections it holds to any other node close, and the forwards under way
// on them end with 503, retryable: a leader that froze (a paused process, a
// dead host whose connections never reset) would otherwise hold its callers
// until their own timeouts, long after the others elected a new one. A
// request the old leader took before it froze may be applied; the
// contract's retryable error covers that, and an Idempotency-Key makes the
// retry of a create safe. Closing connections, not cancelling requests,
// costs a forward nothing.
func (f *Forwarder) LeaderIs(id string) {
	f.conns.closeExcept(f.leaderAddr(id))
}

// leaderAddr is the host:port of id's listener of f's kind, as the
// transport dials it; empty when id is empty or published no address.
func (f *Forwarder) leaderAddr(id string) string {
	m, ok := f.Members.Member(id)
	if !ok || id == "" {
		return ""
	}
	u, err := url.Parse(f.Listener.url(m))
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "443", false: "80"}[u.Scheme == "https"]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// errNotLeader refuses a connection to a node that no longer leads: the
// transport retries a replayable request (a GET, one with an
// Idempotency-Key) once on a new connection after LeaderIs closed its
// connection, and that retry must not go back to the frozen node.
var errNotLeader = errors.New("the node no longer leads")

// peerConns are the forwarder's open connections, by the address dialed.
type peerConns struct {
	// allow says whether a new connection to addr may be made.
	allow  func(addr string) bool
	mu     sync.Mutex
	byAddr map[string]map[*peerConn]struct{}
}

// peerConn leaves peerConns when it closes.
type peerConn struct {
	net.Conn
	addr string
	set  *peerConns
	once sync.Once
}

func (c *peerConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.byAddr[c.addr], c)
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
}

// dial wraps d's connections so that closeExcept can close them.
func (p *peerConns) dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !p.allow(addr) {
			return nil, fmt.Errorf("dial %s: %w", addr, errNotLeader)
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		pc := &peerConn{Conn: c, addr: addr, set: p}
		p.mu.Lock()
		if p.byAddr[addr] == nil {
			p.byAddr[addr] = make(map[*peerConn]struct{})
		}
		p.byAddr[addr][pc] = struct{}{}
		p.mu.Unlock()
		return pc, nil
	}
}

// closeExcept closes every connection not to addr (empty: every one).
func (p *peerConns) closeExcept(addr string) {
	var doomed []*peerConn
	p.mu.Lock()
	for a, set := range p.byAddr {
		if a == addr {
			continue
		}
		for c := range set {
			doomed = append(doomed, c)
		}
	}
	p.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// NewForwarder returns a Forwarder with its proxy ready. tlsCfg is how it
// checks the leader's certificate when the leader's URL is https (nil: the
// system's CAs).
func NewForwarder(node Node, members Members, l Listener, log *slog.Logger, local func(*http.Request) bool, tlsCfg *tls.Config) *Forwarder {
	f := &Forwarder{Node: node, Members: members, Listener: l, Logger: log, Local: local,
		conns: &peerConns{byAddr: make(map[string]map[*peerConn]struct{})}}
	f.conns.allow = func(addr string) bool {
		id, _ := node.Leader()
		return addr == f.leaderAddr(id)
	}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(forwardOf(pr.In).target)
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderForwardedBy, node.ID())
		},
		// -1 flushes every write: long polls and streamed files pass at once.
		FlushInterval: -1,
		// Without a pool the proxy makes a 32 KiB buffer for every answer it
		// copies: a quarter of what a three-node cluster allocated per
		// create, forwarded from two members of three.
		BufferPool: copyBuffers{},
		Transport: &http.Transport{
			DialContext:         f.conns.dial(&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}),
			TLSClientConfig:     tlsCfg,
			TLSHandshakeTimeout: 10 * time.Second,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		},
		// Only an answer the leader gave names it: a leader that did not
		// answer (ErrorHandler) is no place to send the next call.
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(HeaderLeader, strings.TrimRight(forwardOf(resp.Request).target.String(), "/"))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			fi := forwardOf(r)
			if !f.stillLeads(fi.leader) {
				f.refuse(w, r, fi.start, unavailable("the leader changed while it was answering (it may have taken the request)"),
					"forward to leader ended: the leader changed", slog.String("was", fi.leader), slog.Any("err", err))
				return
			}
			f.refuse(w, r, fi.start, unavailable("the leader did not answer: "+err.Error()),
				"forward to leader failed", slog.String("leader", fi.leader), slog.Any("err", err))
		},
	}
	return f
}

// forwardKey holds a forwarded request's *forwardInfo: one context value,
// not one per field, as the proxy sees every forwarded request.
type forwardKey struct{}

// forwardInfo is what the proxy's hooks need of a request it forwards.
type forwardInfo struct {
	target *url.URL  // the leader's listener
	leader string    // the leader's id
	start  time.Time // when the forwarder took the request (a refusal's duration)
}

func forwardOf(r *http.Request) *forwardInfo { return r.Context().Value(forwardKey{}).(*forwardInfo) }

// stillLeads is whether id is the leader this node knows.
func (f *Forwarder) stillLeads(id string) bool {
	now, _ := f.Node.Leader()
	return now == id
}

// copyBuffers are the buffers the proxy copies answers through, reused.
type copyBuffers struct{}

// copyBufferSize is what the proxy would make itself.
const copyBufferSize = 32 << 10

var copyBufferPool = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

func (copyBuffers) Get() []byte { return *copyBufferPool.Get().(*[]byte) }

func (copyBuffers) Put(b []byte) {
	if cap(b) == copyBufferSize {
		b = b[:copyBufferSize]
		copyBufferPool.Put(&b)
	}
}

// refusedAsRemoved answers r as a node removed from the cluster does, and
// reports whether this node is one; only a node that knows no leader is
// asked (a member always knows one but for an election).
func (f *Forwarder) refusedAsRemoved(w http.ResponseWriter, r *http.Request, start time.Time) bool {
	if id, _ := f.Node.Leader(); id != "" {
		return false
	}
	others, removed := f.Node.Removed()
	if !removed {
		return false
	}
	w.Header().Set(vfmembers.HeaderRemoved, f.Node.ID())
	f.refuse(w, r, start, f.removed(others), "request refused: this node was removed from the cluster")
	return true
}

// removed is the answer of a node removed from the cluster: it will never
// have a leader again, so "retry shortly" would send the caller round for
// ever. It names the members left and their addresses for this listener,
// where a member published them; a client given them moves on by itself
// (members.HeaderRemoved). Retryable, as the contract makes every 5xx: the
// request is safe to send again, elsewhere.
func (f *Forwarder) removed(others []string) *apierr.Error {
	type member struct {
		ID  string `json:"id"`
		URL string `json:"url,omitempty"`
	}
	list := make([]member, 0, len(others))
	names := make([]string, 0, len(others))
	for _, id := range others {
		m, _ := f.Members.Member(id)
		u := ""
		if m.ID != "" {
			u = f.Listener.url(m)
		}
		list = append(list, member{ID: id, URL: u})
		if u != "" {
			names = append(names, id+" at "+u)
		} else {
			names = append(names, id)
		}
	}
	msg := fmt.Sprintf("node %s was removed from the cluster and serves no requests; send them to a member: %s",
		f.Node.ID(), strings.Join(names, ", "))
	return apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, msg).
		With("node", f.Node.ID()).With("removed", true).With("members", list)
}

func unavailable(msg string) *apierr.Error {
	e := apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, msg+"; retry shortly")
	e.RetryAfter = 1
	return e
}

// refuse answers e with a request id, like every answer: the forwarder's
// refusals come before the wrapped handler's middleware, which gives the
// others theirs, and which would log and count them. So refuse does both:
// one log line with the request id the client got (msg says why, attrs
// add to it), and Refused.
func (f *Forwarder) refuse(w http.ResponseWriter, r *http.Request, start time.Time, e *apierr.Error, msg string, attrs ...slog.Attr) {
	apierr.RequestIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, r, e)
		d := time.Since(start)
		f.Logger.LogAttrs(r.Context(), slog.LevelWarn, msg, append([]slog.Attr{
			slog.String("request_id", apierr.RequestID(r.Context())), slog.String("listener", f.Listener.String()),
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", e.Status),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.String("error", e.Message),
		}, attrs...)...)
		if f.Refused != nil {
			f.Refused(r, e.Status, d)
		}
	})).ServeHTTP(w, r)
}

// Wrap answers on the leader (or for Local requests) with next and forwards
// everything else.
func (f *Forwarder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if f.Local != nil && f.Local(r) {
			// A removed node's state stopped at its removal: it still
			// answers its own status and metrics (admin), but no public
			// request from it (a video's event stream) would be current.
			if f.Listener == Public && f.refusedAsRemoved(w, r, start) {
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if f.Node.IsLeader() {
			// A leader cut off from the others still believes it leads for a
			// moment; a read it answered then could miss writes a new leader
			// acknowledged. Reads wait for a quorum to confirm it (writes are
			// confirmed by their commit).
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				if err := f.Node.VerifyLeader(r.Context()); err != nil {
					f.refuse(w, r, start, unavailable("this node is no longer sure it leads: "+err.Error()).With("node", f.Node.ID()),
						"request refused: a quorum did not confirm this node leads", slog.Any("err", err))
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		if by := r.Header.Get(HeaderForwardedBy); by != "" {
			f.refuse(w, r, start, unavailable(fmt.Sprintf("node %s forwarded this request to node %s, which is not the leader either (an election is under way)", by, f.Node.ID())).With("node", f.Node.ID()),
				"request refused: forwarded by a node that took this one for the leader", slog.String("forwarded_by", by))
			return
		}
		id, _ := f.Node.Leader()
		if id == "" {
			if f.refusedAsRemoved(w, r, start) {
				return
			}
			f.refuse(w, r, start, unavailable("no leader is elected at the moment").With("node", f.Node.ID()), "request refused: no leader")
			return
		}
		m, ok := f.Members.Member(id)
		if !ok {
			f.refuse(w, r, start, unavailable("the leader "+id+" has not published its addresses yet").With("leader", id),
				"request refused: the leader's addresses are unknown", slog.String("leader", id))
			return
		}
		target, err := url.Parse(f.Listener.url(m))
		if err != nil || target.Host == "" {
			f.refuse(w, r, start, unavailable(fmt.Sprintf("the leader %s published no usable %s address (%q)", id, f.Listener, f.Listener.url(m))).With("leader", id),
				"request refused: the leader's address is unusable", slog.String("leader", id))
			return
		}
		ctx := context.WithValue(r.Context(), forwardKey{}, &forwardInfo{target: target, leader: id, start: start})
		f.proxy.ServeHTTP(w, r.WithContext(ctx))
	})
}
