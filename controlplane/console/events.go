package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// Live updates: GET /console/api/events?page=farm|queue|webhooks|accounts|account|video[&id=][&q=&limit=]
// is a text/event-stream of the page's snapshot, the same JSON as the
// page's own endpoint with the same query:
//
//	retry: 2000
//
//	event: snapshot
//	data: {…}
//
//	: heartbeat
//
//	event: end
//	data: {"reason": "…"}
//
// The first snapshot is sent at once; then the page is rebuilt at most every
// EventsInterval and sent only when it differs from the last one sent
// (generated_at aside). Rebuilding rather than following the state's
// changes keeps one definition of every page (the snapshot endpoint's) and
// catches what changes with time alone (a node going down, a lease nearing
// its deadline); its cost per stream is one page build a second, what the
// polling it replaces cost, bounded by BenchmarkConsole. A video's page
// is also rebuilt at once when the state's watch (fsm.Follow, what the
// public events stream uses) says the video changed. A comment line
// every EventsHeartbeat keeps proxies from closing an idle stream. The
// stream ends with an "end" event when the session does (logout, expiry),
// and without one when the server shuts down or the client stops reading
// (each write has writeTimeout).

// Defaults of Config.EventsInterval and Config.EventsHeartbeat.
const (
	DefaultEventsInterval  = time.Second
	DefaultEventsHeartbeat = 15 * time.Second
)

// writeTimeout bounds each write of a stream: a client that reads nothing
// for this long is cut off. The admin listener's write deadline (armed at
// the answer's first byte) is moved forward before every write.
const writeTimeout = 30 * time.Second

// stamped is a snapshot whose generated_at the stream sets at each send; it
// is left zero when comparing, so that time alone is not a change.
type stamped interface{ stamp(time.Time) }

func (f *FarmJSON) stamp(t time.Time)     { f.GeneratedAt = t }
func (q *QueueJSON) stamp(t time.Time)    { q.GeneratedAt = t }
func (w *WebhooksJSON) stamp(t time.Time) { w.GeneratedAt = t }

// streamPage is the page an events request follows.
func (c *Console) streamPage(r *http.Request) (pageFunc, error) {
	switch p := r.URL.Query().Get("page"); p {
	case "farm":
		return c.farmPage, nil
	case "queue":
		return c.queuePage, nil
	case "webhooks":
		return c.webhooksPage, nil
	case "accounts":
		return c.accountsPage, nil
	case "video", "account":
		id := r.URL.Query().Get("id")
		if id == "" {
			return nil, apierr.Invalid("id", "page="+p+" needs the "+p+"'s id")
		}
		if p == "account" {
			return func(*http.Request) (any, error) { return c.accountPage(id) }, nil
		}
		return func(*http.Request) (any, error) { return c.videoPage(id) }, nil
	default:
		return nil, apierr.Invalid("page", fmt.Sprintf("unknown page %q: use farm, queue, webhooks, accounts, account or video", p))
	}
}

// events streams a page's snapshots.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	page, err := c.streamPage(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	// The first snapshot is built before the answer begins, so that a
	// wrong query or an unknown video is an ordinary error answer.
	v, last, err := snapshot(page, r)
	if err != nil {
		fail(w, r, err)
		return
	}
	// A video's page also wakes at once when the video's status, stage or
	// progress changes (the FSM's watch, which the public events stream
	// uses); the tick catches the rest (tasks' nodes and leases).
	var wake <-chan struct{}
	if q := r.URL.Query(); q.Get("page") == "video" {
		if sub, ok := c.cfg.FSM.Follow("", q.Get("id")); ok {
			defer sub.Close()
			wake = sub.Wake
		}
	}
	ck, _ := r.Cookie(CookieName) // requireSession admitted it
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	c.metrics.streams.Inc()
	defer c.metrics.streams.Dec()
	send := func(s string) bool {
		if rc.SetWriteDeadline(time.Now().Add(writeTimeout)) != nil {
			return false
		}
		if _, err := w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n\n") || !send(c.event(v)) {
		return
	}
	tick := time.NewTicker(c.cfg.EventsInterval)
	defer tick.Stop()
	beat := time.NewTicker(c.cfg.EventsHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.stopping:
			return
		case <-beat.C:
			if !send(": heartbeat\n\n") {
				return
			}
		case <-wake:
			if !c.update(r, page, ck, &last, send) {
				return
			}
		case <-tick.C:
			if !c.update(r, page, ck, &last, send) {
				return
			}
		}
	}
}

// update rebuilds the page and sends it if it changed since last; false
// ends the stream (the session ended, or the client is gone).
func (c *Console) update(r *http.Request, page pageFunc, ck *http.Cookie, last *[]byte, send func(string) bool) bool {
	if _, ok := c.sessions.get(ck.Value); !ok {
		send("event: end\ndata: {\"reason\":\"the console session ended (expired or logged out): log in again\"}\n\n")
		return false
	}
	v, cur, err := snapshot(page, r)
	if err != nil {
		// A page that cannot be built now (the video was forgotten, a
		// member is unreachable) is sent as an error event; the stream
		// goes on.
		b, _ := json.Marshal(map[string]string{"message": err.Error()})
		return send("event: failure\ndata: " + string(b) + "\n\n")
	}
	if bytes.Equal(cur, *last) {
		return true
	}
	*last = cur
	return send(c.event(v))
}

// snapshot builds a page and its JSON with generated_at left zero, which
// the stream compares with the last one it sent.
func snapshot(page pageFunc, r *http.Request) (any, []byte, error) {
	v, err := page(r)
	if err != nil {
		return nil, nil, err
	}
	if s, ok := v.(stamped); ok {
		s.stamp(time.Time{})
	}
	b, err := json.Marshal(v)
	return v, b, err
}

// event is the snapshot event of v, stamped with the time it is sent.
func (c *Console) event(v any) string {
	if s, ok := v.(stamped); ok {
		s.stamp(c.cfg.Now().UTC())
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // it was marshalled a moment ago
	}
	return "event: snapshot\ndata: " + string(b) + "\n\n"
}

// StopStreams ends every event stream (register it with the listener's
// http.Server.RegisterOnShutdown: a stream never goes idle by itself).
func (c *Console) StopStreams() { c.stopOnce.Do(func() { close(c.stopping) }) }
