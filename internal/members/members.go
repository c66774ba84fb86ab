// Package members keeps where a client of a vidfarm cluster sends its
// requests: the Go SDK's calls and event streams, and a render agent's
// calls. A client is given one member's URL (its base) and may be given
// the others. A follower forwards every request to the leader and names
// it in its answer (HeaderLeader); a client that knows the members sends
// its next requests there, sparing the cluster the hop, but only to a
// member it was given: an address it does not know never gets its
// credentials. When a member gives no answer at all, the client moves to
// the next member in the order given, wrapping around, so that it keeps
// working through the loss of any one member, the leader included.
//
// It is a standard-library leaf, imported by client and agent alike.
package members

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
)

// HeaderLeader, on an answer a follower forwarded, is the leader's base URL
// for the listener the request came to (controlplane/cluster sets it; the
// SDK, the agent and the bench follow it). It is defined here, in the leaf
// they all import, so that there is one name to drift from.
const HeaderLeader = "X-Vidfarm-Leader"

// HeaderRemoved, on an answer, names the node that gave it, which was
// removed from the cluster and will serve nothing again: a client that knows
// other members moves to the next one, as from a member that gave no answer
// (Cursor.Answered).
const HeaderRemoved = "X-Vidfarm-Removed"

// Set is the members a client was given: its base URL first, then the
// others as given, each once.
type Set struct {
	order []*url.URL
	known map[string]*url.URL
}

// NewSet makes the set of base and others, dropping repeats (a member named
// twice, or the base URL again). Neither may change afterwards.
func NewSet(base *url.URL, others ...*url.URL) *Set {
	s := &Set{order: []*url.URL{base}, known: map[string]*url.URL{key(base): base}}
	for _, u := range others {
		if _, dup := s.known[key(u)]; dup {
			continue
		}
		s.known[key(u)] = u
		s.order = append(s.order, u)
	}
	return s
}

// Split reads a comma-separated list of members' URLs, as a command line
// gives them (the first is the base URL), trimming the spaces around each.
// The URLs are checked by whoever parses them.
func Split(list string) []string {
	out := strings.Split(list, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// key is how a member is known: its URL without a trailing slash.
func key(u *url.URL) string { return strings.TrimRight(u.String(), "/") }

// Len is how many members the set holds, the base URL included.
func (s *Set) Len() int { return len(s.order) }

// Cursor is where one stream of requests goes, among the members of a Set.
// It starts at the base URL and is safe for concurrent use.
type Cursor struct {
	set *Set
	at  atomic.Pointer[url.URL]
}

// Cursor returns a new cursor at the base URL. A client may keep several,
// moving apart: the SDK's calls follow the leader, its event streams do not.
func (s *Set) Cursor() *Cursor {
	c := &Cursor{set: s}
	c.at.Store(s.order[0])
	return c
}

// At is the member requests go to now. Pass what it returned to Failover
// when that request gets no answer.
func (c *Cursor) At() *url.URL { return c.at.Load() }

// Follow moves the cursor to the leader h names (HeaderLeader), if that is
// one of the members; a name it does not know, or none, leaves it where it
// is.
func (c *Cursor) Follow(h http.Header) {
	v := h.Get(HeaderLeader)
	if v == "" || c.set.Len() < 2 {
		return
	}
	// Matched as text, the way the set knows its members: a name that is
	// no URL, or not one of theirs, is simply not found.
	if m, ok := c.set.known[strings.TrimRight(v, "/")]; ok {
		c.at.Store(m)
	}
}

// Answered takes the headers of an answer from member from, sent under
// ctx: the cursor follows the leader they name (Follow), unless from said
// it was removed (PassRemoved).
func (c *Cursor) Answered(ctx context.Context, from *url.URL, h http.Header) {
	if !c.PassRemoved(ctx, from, h) {
		c.Follow(h)
	}
}

// PassRemoved moves the cursor off from, as Failover does, when its answer
// (headers h, sent under ctx) says it was removed from the cluster
// (HeaderRemoved), so the client's retry goes to a member that serves; it
// reports whether it said so. A cursor that does not follow the leader
// (the SDK's event streams) calls it alone.
func (c *Cursor) PassRemoved(ctx context.Context, from *url.URL, h http.Header) bool {
	if h.Get(HeaderRemoved) == "" {
		return false
	}
	c.Failover(ctx, from)
	return true
}

// Home moves the cursor back to the base URL: for a client that must keep
// its place among the members rather than go round them (the bench's
// workers, spread over the members to load them evenly; see Failover).
func (c *Cursor) Home() { c.at.Store(c.set.order[0]) }

// Failover moves the cursor off from, which gave no answer to a request
// under ctx, to the member after it in the set's order. Requests that
// failed at from together move it once: the swap happens only while the
// cursor is still at from, so a late failure cannot undo a move made since
// (to the leader, say). A request its caller canceled or timed out says
// nothing of the member and moves nothing; with one member there is
// nowhere to go.
func (c *Cursor) Failover(ctx context.Context, from *url.URL) {
	n := c.set.Len()
	if n < 2 || ctx.Err() != nil {
		return
	}
	i := slices.Index(c.set.order, from) // -1 for a URL not in the set: the base URL next
	c.at.CompareAndSwap(from, c.set.order[(i+1)%n])
}
