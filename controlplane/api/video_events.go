package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// GET /v1/videos/{id}/events: a text/event-stream of a video's changes (an
// addition to the contract).
//
// Each event is the video object, as GET /v1/videos/{id} answers it, after
// one change of its status, stage, scenes, percent, queue position or wait
// reason:
//
//	id: 1234-9f3a2c1e
//	event: video
//	data: {"id":"vid_…","status":"processing","progress":{…},…}
//
// The id is the Raft index of the entry after which the video was so, and a
// fingerprint of what changed (fsm/watch.go). Every node that follows the
// video finds the same changes at the same indexes, so a client that
// reconnects to any node with Last-Event-ID gets exactly the changes after
// the one it saw. A node that began to follow the video after that index
// cannot list what came between: it sends the video as it now is, unless
// the fingerprint says the client has that already. The first answer
// without Last-Event-ID is the video as it now is.
//
// A comment line (": heartbeat") every EventsHeartbeat keeps proxies from
// closing a quiet stream. The stream ends after the event of a final state
// (completed, failed, canceled). A client that already holds the final
// state gets 204, which tells an EventSource to stop reconnecting.

// DefaultEventsHeartbeat is how often a quiet stream gets a comment line.
const DefaultEventsHeartbeat = 15 * time.Second

// eventWriteTimeout bounds one write to a stream: a client that reads
// nothing for this long is cut off (its TCP window is full).
const eventWriteTimeout = 30 * time.Second

// eventsRetryMS is the reconnection delay an EventSource is told.
const eventsRetryMS = 2000

// EventsPath reports whether a request is for a video's event stream: the
// one public read a follower answers from its own state (the others go to
// the leader).
func EventsPath(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/videos/")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, "/events")
	return ok && id != "" && !strings.Contains(id, "/")
}

// lastEventID is a parsed Last-Event-ID.
type lastEventID struct {
	index uint64
	sum   uint32
	ok    bool // a header was sent
}

func parseLastEventID(v string) (lastEventID, *apierr.Error) {
	if v == "" {
		return lastEventID{}, nil
	}
	idx, sum, _ := strings.Cut(v, "-")
	i, err := strconv.ParseUint(idx, 10, 64)
	s, serr := strconv.ParseUint(sum, 16, 32)
	if err != nil || serr != nil || len(sum) != 8 {
		return lastEventID{}, apierr.Invalid("Last-Event-ID",
			fmt.Sprintf("Last-Event-ID %q is not an event id of this API (<index>-<8 hex digits>); send the id of the last event received, or none to start afresh", v))
	}
	return lastEventID{index: i, sum: uint32(s), ok: true}, nil
}

// readBarrierTimeout bounds how long an event stream waits for this node to
// catch up with the cluster before it answers 503.
const readBarrierTimeout = 10 * time.Second

func eventID(c *fsm.Change) string { return fmt.Sprintf("%d-%08x", c.Index, c.Sum) }

func (a *API) videoEvents(w http.ResponseWriter, r *http.Request) {
	last, e := parseLastEventID(r.Header.Get("Last-Event-ID"))
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	if a.cfg.ReadBarrier != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readBarrierTimeout)
		err := a.cfg.ReadBarrier(ctx, last.index)
		cancel()
		if err != nil {
			ae := apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError,
				"this node has not caught up with the cluster yet ("+err.Error()+"); retry shortly, here or on another node")
			ae.Retryable, ae.RetryAfter = true, 1
			apierr.Write(w, r, ae)
			return
		}
	}
	sub, ok := a.fsm.Follow(principalOf(r).AccountID, chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("video"))
		return
	}
	defer sub.Close()
	first, pos := a.firstEvents(sub, last)
	if len(first) == 0 && sub.Latest().Final() {
		w.WriteHeader(http.StatusNoContent) // the client has the final state
		return
	}
	a.metrics.streams.Inc()
	defer a.metrics.streams.Dec()
	st := &eventStream{a: a, w: w, rc: http.NewResponseController(w), sent: pos}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event at once
	w.WriteHeader(http.StatusOK)
	if st.write([]byte("retry: "+strconv.Itoa(eventsRetryMS)+"\n\n")) != nil {
		return
	}
	if st.send(first) != nil || st.final {
		return
	}
	a.followStream(r.Context(), st, sub)
}

// firstEvents is what a stream starts with: the video as it is, or the
// changes after the client's last event; and the index the client will
// then be at.
func (a *API) firstEvents(sub *fsm.Subscription, last lastEventID) ([]*fsm.Change, uint64) {
	l := sub.Latest()
	if !last.ok {
		return []*fsm.Change{l}, l.Index
	}
	if changes, complete := sub.Since(last.index); complete {
		return changes, last.index
	}
	a.metrics.resyncs.Inc()
	if l.Sum != last.sum {
		return []*fsm.Change{l}, l.Index
	}
	return nil, l.Index // the client holds the video as it is
}

// followStream sends each change as the watch records it, and heartbeats.
func (a *API) followStream(ctx context.Context, st *eventStream, sub *fsm.Subscription) {
	beat := a.cfg.EventsHeartbeat
	if beat <= 0 {
		beat = DefaultEventsHeartbeat
	}
	hb := time.NewTicker(beat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.a.streamsDone:
			return
		case <-hb.C:
			if st.write([]byte(": heartbeat\n\n")) != nil {
				return
			}
		case <-sub.Wake:
			changes, complete := sub.Since(st.sent)
			if !complete {
				// This stream fell further behind than the history kept:
				// it goes on from the video as it now is.
				a.metrics.resyncs.Inc()
				changes = []*fsm.Change{sub.Latest()}
			}
			if st.send(changes) != nil || st.final {
				return
			}
			hb.Reset(beat)
		}
	}
}

// eventStream writes events to one client.
type eventStream struct {
	a     *API
	w     http.ResponseWriter
	rc    *http.ResponseController
	sent  uint64 // index of the last change sent
	final bool   // the last change sent was a final state
}

func (st *eventStream) send(changes []*fsm.Change) error {
	for _, c := range changes {
		if err := st.write(c.Encoded(st.a.encodeEvent)); err != nil {
			return err
		}
		st.sent, st.final = c.Index, c.Final()
		if st.final {
			return nil
		}
	}
	return nil
}

// write sends b and flushes it, under a fresh write deadline.
func (st *eventStream) write(b []byte) error {
	if err := st.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// encodeEvent is one change as an SSE event: the video object as a read
// answers it. A queued video's ETA is estimated when the event is first
// encoded (it is a guess from the current state, not part of the change).
func (a *API) encodeEvent(c *fsm.Change) []byte {
	q := c.Video
	a.addWait(&q)
	data, err := json.Marshal(a.videoView(q, a.readExpiry()))
	if err != nil {
		panic(fmt.Sprintf("api: a video does not encode: %v", err)) // plain data: cannot happen
	}
	var b strings.Builder
	b.Grow(len(data) + 48)
	b.WriteString("id: ")
	b.WriteString(eventID(c))
	b.WriteString("\nevent: video\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return []byte(b.String())
}
