package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// withHeartbeat makes quiet event streams send their comment line often.
func withHeartbeat(d time.Duration) option { return func(c *server.Config) { c.EventsHeartbeat = d } }

// eventReader reads one events stream in the background.
type eventReader struct {
	t      *testing.T
	stream *client.EventStream
	events chan client.VideoEvent
	end    chan error // the error Next ended with (io.EOF at a clean end)
}

func openEvents(t *testing.T, base, key, id, last string) (*eventReader, error) {
	t.Helper()
	c, err := client.New(base, key, client.WithStreamIdle(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	es, err := c.VideoEvents(context.Background(), id, last)
	if err != nil {
		return nil, err
	}
	r := &eventReader{t: t, stream: es, events: make(chan client.VideoEvent, 256), end: make(chan error, 1)}
	t.Cleanup(func() { es.Close() })
	go func() {
		for {
			ev, err := es.Next()
			if err != nil {
				r.end <- err
				return
			}
			r.events <- ev
		}
	}()
	return r, nil
}

// until reads events until cond holds for one, and returns every event read.
func (r *eventReader) until(what string, cond func(client.VideoEvent) bool) []client.VideoEvent {
	r.t.Helper()
	return r.read(what, cond)
}

// rest reads every event up to the stream's end, which must be clean.
func (r *eventReader) rest() []client.VideoEvent {
	r.t.Helper()
	return r.read("the end", nil)
}

// read reads events until cond holds for one or, with cond nil, until the
// stream ends cleanly.
func (r *eventReader) read(what string, cond func(client.VideoEvent) bool) []client.VideoEvent {
	r.t.Helper()
	var got []client.VideoEvent
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-r.events:
			got = append(got, ev)
			if cond != nil && cond(ev) {
				return got
			}
		case err := <-r.end:
			if len(r.events) > 0 {
				// Events read before the end come first.
				r.end <- err
				continue
			}
			if cond != nil || !errors.Is(err, io.EOF) {
				r.t.Fatalf("the stream ended (%v) before %s; read %s", err, what, describeEvents(got))
			}
			return got
		case <-timeout:
			r.t.Fatalf("no event %s in 30 s; read %s", what, describeEvents(got))
		}
	}
}

func statusIs(s string) func(client.VideoEvent) bool {
	return func(ev client.VideoEvent) bool { return ev.Video.Status == s }
}

func eventIndex(t *testing.T, ev client.VideoEvent) uint64 {
	t.Helper()
	idx, _, ok := strings.Cut(ev.ID, "-")
	n, err := strconv.ParseUint(idx, 10, 64)
	if !ok || err != nil {
		t.Fatalf("event id %q is not <index>-<sum>", ev.ID)
	}
	return n
}

// seen is what a watcher sees of an event: two events in a row must differ in it.
func seen(ev client.VideoEvent) string {
	v := ev.Video
	if v.Progress == nil {
		return v.Status
	}
	p := v.Progress
	return fmt.Sprintf("%s %s %d%% pos %d %s", v.Status, p.Stage, p.Percent, p.QueuePosition, p.Reason)
}

func describeEvents(evs []client.VideoEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "[%s %s] ", ev.ID, seen(ev))
	}
	return b.String()
}

// checkOrder asserts ids strictly increase and no event repeats the one before.
func checkOrder(t *testing.T, what string, evs []client.VideoEvent) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if eventIndex(t, evs[i]) <= eventIndex(t, evs[i-1]) || seen(evs[i]) == seen(evs[i-1]) {
			t.Fatalf("%s: event %d does not follow event %d: %s", what, i, i-1, describeEvents(evs))
		}
	}
}

func sameEvents(t *testing.T, what string, got, want []client.VideoEvent) {
	t.Helper()
	if describeEvents(got) != describeEvents(want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, describeEvents(got), describeEvents(want))
	}
}

// taskReport posts a progress, complete or fail report for a leased task.
func (h *harness) progressTask(cred string, a wire.Assignment, percent float64) {
	h.t.Helper()
	r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(a.TaskID)+"/progress", cred, wire.ProgressRequest{Token: a.Token, Percent: percent})
	if r.Status != http.StatusNoContent {
		h.t.Fatalf("progress %s: %d %s", a.TaskID, r.Status, r.Body)
	}
}

// TestVideoEvents follows a video through a real node from queued to
// completed: every change once and in order, heartbeats, the end after the
// final state; a second stream resuming with Last-Event-ID gets exactly the
// changes after it; a client holding the final state gets 204; errors in the
// contract's envelope.
func TestVideoEvents(t *testing.T) {
	t.Parallel()
	h := start(t, withAgent(time.Minute), withHeartbeat(50*time.Millisecond))
	_, key := h.account("pro", 1000)
	_, otherKey := h.account("pro", 1000)
	id := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	path := "/v1/videos/" + id + "/events"

	expectAPIError(t, h.do("GET", path, otherKey, nil), http.StatusNotFound, "not_found")
	expectAPIError(t, h.do("GET", "/v1/videos/vid_nope/events", key, nil), http.StatusNotFound, "not_found")
	expectAPIError(t, h.do("GET", path, key, nil, "Last-Event-ID", "yesterday"), http.StatusBadRequest, "invalid_request")
	expectAPIError(t, h.do("GET", path, "", nil), http.StatusUnauthorized, "missing_api_key")

	// A quiet stream gets its heartbeat comment.
	req, _ := http.NewRequest("GET", h.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("events answered %d %q", res.StatusCode, ct)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && sc.Text() != ": heartbeat" {
	}
	res.Body.Close()
	if sc.Err() != nil {
		t.Fatalf("no heartbeat: %v", sc.Err())
	}

	a, err := openEvents(t, h.base, key, id, "")
	if err != nil {
		t.Fatal(err)
	}
	first := a.until("the first", func(client.VideoEvent) bool { return true })
	if v := first[0].Video; v.Status != "queued" || v.Progress == nil || v.Progress.Reason != "no_node_fits" {
		t.Fatalf("first event %+v, want the queued video no node can run", v.Progress)
	}
	cred := h.registerNode("gpu-1")
	render := h.leaseTask(cred, 5)
	got := append(first, a.until("processing", statusIs("processing"))...)
	// A second stream resumes after the first event while the first is open.
	b, err := openEvents(t, h.base, key, id, first[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "the resumed stream's first events", b.until("processing", statusIs("processing")), got[1:])

	h.progressTask(cred, render, 50)
	got = append(got, a.until("50% of the render", func(ev client.VideoEvent) bool {
		return ev.Video.Progress != nil && ev.Video.Progress.Percent > 0
	})...)
	h.runTask(cred, render, "clip.mp4")
	fin := h.leaseTask(cred, 5)
	h.runTask(cred, fin, wire.ArtifactVideo, wire.ArtifactPoster)
	got = append(got, a.rest()...)
	checkOrder(t, "the stream", got)
	last := got[len(got)-1]
	if last.Video.Status != "completed" || last.Video.VideoURL == "" {
		t.Fatalf("the stream ended with %s, want the completed video with its URL", describeEvents(got))
	}
	var stages []string
	for _, ev := range got {
		if ev.Video.Progress != nil && ev.Video.Progress.Stage != "" && (len(stages) == 0 || stages[len(stages)-1] != ev.Video.Progress.Stage) {
			stages = append(stages, ev.Video.Progress.Stage)
		}
	}
	if strings.Join(stages, ",") != "rendering,finalizing" {
		t.Fatalf("stages %v in %s", stages, describeEvents(got))
	}
	rest := b.rest()
	sameEvents(t, "the resumed stream", rest, got[len(got)-len(rest):])

	// A client that holds the final state has nothing more to get.
	c, _ := client.New(h.base, key)
	if _, err := c.VideoEvents(context.Background(), id, last.ID); !errors.Is(err, client.ErrStreamFinal) {
		t.Fatalf("resuming after the final event: %v, want ErrStreamFinal (204)", err)
	}
	// One that does not gets the video as it is, and the end: no stream
	// follows the video any more, so the node cannot list the changes.
	late, err := openEvents(t, h.base, key, id, first[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if evs := late.rest(); len(evs) != 1 || seen(evs[0]) != seen(last) || eventIndex(t, evs[0]) < eventIndex(t, last) {
		t.Fatalf("a late resume got %s, want the final state alone", describeEvents(evs))
	}
}

// TestVideoEventsAcrossLeaderChange follows a video on a three-node cluster:
// streams on both followers (served from their own state), and a client on
// the leader that reconnects with Last-Event-ID to a survivor once the leader
// stops. Every node names each change with the same id, so the client sees
// every change once and in order, exactly as the followers' streams do.
func TestVideoEventsAcrossLeaderChange(t *testing.T) {
	agent := withAgent(time.Minute)
	beat := withHeartbeat(200 * time.Millisecond)
	n1 := start(t, agent, beat, func(c *server.Config) { c.NodeID = "n1" })
	join := "http://" + n1.srv.AdminAddr()
	n2 := start(t, agent, beat, func(c *server.Config) { c.NodeID, c.Join = "n2", join })
	n3 := start(t, agent, beat, func(c *server.Config) { c.NodeID, c.Join = "n3", join })
	nodes := map[string]*harness{"n1": n1, "n2": n2, "n3": n3}
	ctx := context.Background()
	leaderOf := func(h *harness) *harness {
		m, err := h.admin.ClusterMembers(ctx)
		if err != nil || len(m.Members) != 3 {
			return nil
		}
		for _, mm := range m.Members {
			if mm.Suffrage != "Voter" {
				return nil
			}
		}
		return nodes[m.Leader]
	}
	var leader *harness
	waitUntil(t, "three voters and a leader", 30*time.Second, func() bool { leader = leaderOf(n3); return leader != nil })
	var key string
	waitShowing(t, "an account", 30*time.Second, func() (bool, any) {
		a, err := leader.admin.CreateAccount(ctx, "watcher", "pro", 1000)
		key = a.APIKey
		return err == nil, err
	})
	var id string
	waitShowing(t, "a video", 30*time.Second, func() (bool, any) {
		r := leader.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5), "Idempotency-Key", "watched")
		if r.Status == http.StatusCreated {
			id = r.json(t)["id"].(string)
		}
		return r.Status == http.StatusCreated, string(r.Body)
	})
	var followers []*harness
	for _, h := range nodes {
		if h != leader {
			followers = append(followers, h)
		}
	}
	// Followers answer the stream themselves; a follower that has not yet
	// applied the create answers 404 or 503, and is asked again.
	refs := make([]*eventReader, len(followers))
	for i, f := range followers {
		waitShowing(t, "a stream on follower "+f.cfg.NodeID, 20*time.Second, func() (bool, any) {
			var err error
			refs[i], err = openEvents(t, f.base, key, id, "")
			return err == nil, err
		})
	}
	// A 503 while an election settles is retryable, as for any client.
	var cl *eventReader
	waitShowing(t, "a stream on the leader", 20*time.Second, func() (bool, any) {
		var err error
		cl, err = openEvents(t, leader.base, key, id, "")
		return err == nil, err
	})
	got := cl.until("the first event", func(client.VideoEvent) bool { return true })
	cred := leader.registerNode("gpu-1")
	render := leader.leaseTask(cred, 5)
	leader.progressTask(cred, render, 30)
	got = append(got, cl.until("30% of the render", func(ev client.VideoEvent) bool {
		return ev.Video.Progress != nil && ev.Video.Progress.Percent > 0
	})...)

	// The leader stops: its stream ends, and the client goes on elsewhere.
	leader.stop()
	if err := <-cl.end; err == nil {
		t.Fatal("the stream on the stopped leader did not end")
	}
	lastID := got[len(got)-1].ID
	var resumed *eventReader
	waitShowing(t, "the client resumes on a survivor", 30*time.Second, func() (bool, any) {
		var errs []error
		for _, f := range followers {
			r, err := openEvents(t, f.base, key, id, lastID)
			if err == nil {
				resumed = r
				return true, nil
			}
			errs = append(errs, err)
		}
		return false, errs
	})
	// The new leader takes the agent's reports (any node forwards them),
	// once it is elected: until then they are 503, which agents retry.
	survivor := followers[0]
	waitShowing(t, "a progress report after the election", 30*time.Second, func() (bool, any) {
		r := survivor.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(render.TaskID)+"/progress", cred, wire.ProgressRequest{Token: render.Token, Percent: 80})
		return r.Status == http.StatusNoContent, string(r.Body)
	})
	survivor.runTask(cred, render, "clip.mp4")
	fin := survivor.leaseTask(cred, 5)
	survivor.runTask(cred, fin, wire.ArtifactVideo, wire.ArtifactPoster)
	got = append(got, resumed.rest()...)
	checkOrder(t, "the client", got)
	if last := got[len(got)-1]; last.Video.Status != "completed" {
		t.Fatalf("the client's stream ended with %s", describeEvents(got))
	}
	firstIndex := eventIndex(t, got[0])
	for i, r := range refs {
		all := r.rest()
		checkOrder(t, "follower "+followers[i].cfg.NodeID, all)
		var after []client.VideoEvent
		for _, ev := range all {
			if eventIndex(t, ev) > firstIndex {
				after = append(after, ev)
			}
		}
		sameEvents(t, "the client's changes against follower "+followers[i].cfg.NodeID+"'s stream", got[1:], after)
	}
}
