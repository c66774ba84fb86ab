package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// eventPage is one answer of GET /v1/events.
type eventPage struct {
	Data []struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
		Data    struct {
			Video map[string]any `json:"video"`
		} `json:"data"`
	} `json:"data"`
	Object  string `json:"object"`
	Count   int    `json:"count"`
	HasMore bool   `json:"has_more"`
}

func (h *harness) events(key string, q url.Values) eventPage {
	h.t.Helper()
	r := h.do("GET", "/v1/events?"+q.Encode(), key, nil)
	expectAPIStatus(h.t, r, http.StatusOK)
	var p eventPage
	jsonInto(h.t, r, &p)
	if p.Object != "list" || p.Count != len(p.Data) {
		h.t.Fatalf("GET /v1/events: %s", r.Body)
	}
	return p
}

// startedLog waits for the leader to switch the event log on, and then its
// ids to sortable ones, its videos' specs to references and its created
// events to derived ones, as it does once every member understands the
// commands.
func startedLog(t *testing.T, h *harness) {
	t.Helper()
	eventually(t, h.srv.Node.FSM.EventLogOn, "the leader to start the event log")
	eventually(t, h.srv.Node.FSM.EventIDsSortable, "the leader to make the event log's ids sortable")
	eventually(t, h.srv.Node.FSM.EventSpecsByReference, "the leader to log videos' specs by reference")
	eventually(t, h.srv.Node.FSM.CreatedEventsDerived, "the leader to derive created events from their videos")
}

// TestEventLogAPI goes through GET /v1/events on a real node: what each
// change of a video writes, the ids its webhook delivery carries, the type
// filter, the cursor, another account's log and refusals.
func TestEventLogAPI(t *testing.T) {
	h := start(t, withWebhooks(newFakeClock()))
	startedLog(t, h)
	_, key := h.account("pro", 1000)
	_, other := h.account("pro", 1000)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	h.registerWebhook(key, rc.srv.URL+"/hook", fsm.EventVideoFailed, fsm.EventVideoCanceled)

	failed := h.failedVideo(key)
	canceled := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	expectAPIStatus(t, h.do("POST", "/v1/videos/"+canceled+"/cancel", key, nil), http.StatusOK)
	queued := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	h.create(other, manualReq("duration_seconds", 5))

	type ev struct{ typ, video string }
	want := []ev{{fsm.EventVideoCreated, failed}, {fsm.EventVideoFailed, failed}, {fsm.EventVideoCreated, canceled},
		{fsm.EventVideoCanceled, canceled}, {fsm.EventVideoCreated, queued}}
	all := h.events(key, url.Values{"limit": {"100"}})
	var got []ev
	for _, e := range all.Data {
		got = append(got, ev{e.Type, e.Data.Video["id"].(string)})
		if e.Object != "event" || e.Created == 0 || len(e.ID) < 5 || e.ID[:4] != "evt_" || e.Data.Video["status"] == nil {
			t.Errorf("event %+v", e)
		}
	}
	if !slices.Equal(got, want) || all.HasMore {
		t.Fatalf("the log lists %v (has_more %v), want %v", got, all.HasMore, want)
	}
	if all.Data[4].Data.Video["status"] != "queued" || all.Data[3].Data.Video["status"] != "canceled" {
		t.Fatalf("videos as the events hold them: %v, %v", all.Data[4].Data.Video, all.Data[3].Data.Video)
	}

	// The webhook deliveries carry the same ids and the same events.
	ds := rc.waitFor(2)
	byID := map[string]map[string]any{}
	for _, d := range ds {
		byID[d.Event["id"].(string)] = d.Event
	}
	for _, i := range []int{1, 3} {
		d, ok := byID[all.Data[i].ID]
		if !ok || d["type"] != all.Data[i].Type || d["created"] != float64(all.Data[i].Created) {
			t.Fatalf("log event %s %s: delivered %v", all.Data[i].ID, all.Data[i].Type, d)
		}
		// The delivery keeps its copy of the video; the log reads the spec
		// from the video's record (SpecsByReference): the same video.
		if data, _ := d["data"].(map[string]any); !reflect.DeepEqual(data["video"], all.Data[i].Data.Video) {
			t.Fatalf("log event %s %s: video %v, delivered %v", all.Data[i].ID, all.Data[i].Type, all.Data[i].Data.Video, data["video"])
		}
	}
	if all.Data[1].ID != fsm.EventID(failed) {
		t.Fatalf("failure event %s, want %s", all.Data[1].ID, fsm.EventID(failed))
	}
	// Created events are derived from their videos (DerivedCreatedEvents):
	// their ids name them.
	for i, v := range map[int]string{0: failed, 2: canceled, 4: queued} {
		if id := all.Data[i].ID; id != "evt_created_"+v {
			t.Fatalf("created event of %s: id %s", v, id)
		}
	}

	// Pages, oldest first, and the type filter (one, several, repeated).
	var paged []string
	for q := (url.Values{"limit": {"2"}}); ; {
		p := h.events(key, q)
		for _, e := range p.Data {
			paged = append(paged, e.ID)
		}
		if !p.HasMore {
			break
		}
		q.Set("after", p.Data[len(p.Data)-1].ID)
	}
	if len(paged) != 5 || paged[0] != all.Data[0].ID || paged[4] != all.Data[4].ID {
		t.Fatalf("paged %v", paged)
	}
	for _, c := range []struct {
		q    url.Values
		want []string
	}{
		{url.Values{"type": {"video.created"}}, []string{all.Data[0].ID, all.Data[2].ID, all.Data[4].ID}},
		{url.Values{"type": {"video.failed,video.canceled"}}, []string{all.Data[1].ID, all.Data[3].ID}},
		{url.Values{"type": {"video.canceled", "video.failed"}}, []string{all.Data[1].ID, all.Data[3].ID}},
		{url.Values{"type": {"video.created"}, "after": {all.Data[1].ID}}, []string{all.Data[2].ID, all.Data[4].ID}},
		{url.Values{"type": {"video.completed"}}, nil},
	} {
		var ids []string
		for _, e := range h.events(key, c.q).Data {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("%v: %v, want %v", c.q, ids, c.want)
		}
	}

	// Another account sees only its own, and cannot page from this one's.
	if p := h.events(other, nil); len(p.Data) != 1 || p.Data[0].Type != fsm.EventVideoCreated {
		t.Fatalf("the other account's log: %+v", p)
	}
	for _, c := range []struct {
		key, query, field string
	}{
		{other, "after=" + all.Data[0].ID, "after"},
		{key, "after=evt_unknown", "after"},
		{key, "type=video.started", "type"},
		{key, "type=video.created,", "type"},
		{key, "limit=0", "limit"},
		{key, "limit=101", "limit"},
		{key, "starting_after=" + all.Data[0].ID, "starting_after"},
	} {
		e := expectAPIError(t, h.do("GET", "/v1/events?"+c.query, c.key, nil), http.StatusBadRequest, "invalid_request")
		if f := errDetails(t, e)["field"]; f != c.field {
			t.Errorf("%s: details.field %v, want %s", c.query, f, c.field)
		}
	}
	expectAPIError(t, h.do("GET", "/v1/events", "", nil), http.StatusUnauthorized, "missing_api_key")

	page := h.adminGet("/metrics")
	// The two final events are records; the three created ones are read
	// from their videos.
	if v, ok := metricSample(page, `vidfarm_state_records{kind="events"}`); !ok || v != 2 {
		t.Errorf(`vidfarm_state_records{kind="events"} = %v (%v), want 2`, v, ok)
	}
	if v, ok := metricSample(page, `vidfarm_state_records_in_memory{kind="event_log"}`); !ok || v != 2 {
		t.Errorf(`before a checkpoint vidfarm_state_records_in_memory{kind="event_log"} = %v (%v), want 2`, v, ok)
	}
	// After a checkpoint the log is served from the state file alone.
	if _, err := h.admin.Snapshot(context.Background()); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	page = h.adminGet("/metrics")
	if v, ok := metricSample(page, `vidfarm_state_records_in_memory{kind="event_log"}`); !ok || v != 0 {
		t.Errorf(`after a checkpoint vidfarm_state_records_in_memory{kind="event_log"} = %v (%v), want 0`, v, ok)
	}
	if again := h.events(key, url.Values{"limit": {"100"}}); len(again.Data) != 5 || again.Data[4].ID != all.Data[4].ID {
		t.Errorf("from the state file the log lists %d events", len(again.Data))
	}
}

// TestEventLogPagesWhileWritten pages through GET /v1/events while three
// writers create videos: every created event is read once, none is
// skipped, and each writer's come in the order it made them.
func TestEventLogPagesWhileWritten(t *testing.T) {
	h := start(t)
	startedLog(t, h)
	_, key := h.account("pro", 1_000_000)
	const writers, each = 3, 25
	made := make([][]string, writers)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r := h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5))
				if r.Status != http.StatusCreated {
					t.Errorf("create: %d %s", r.Status, r.Body)
					return
				}
				var v struct{ ID string }
				jsonInto(t, r, &v)
				made[w] = append(made[w], v.ID)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	var read []string // video ids, in the order the log listed their events
	seen := map[string]bool{}
	q := url.Values{"limit": {"7"}}
	finished, during := false, 0
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("the reader never caught up")
		}
		select {
		case <-done:
			finished = true
		default:
		}
		p := h.events(key, q)
		if !finished && len(p.Data) > 0 {
			during++
		}
		for _, e := range p.Data {
			if seen[e.ID] {
				t.Fatalf("event %s listed twice", e.ID)
			}
			seen[e.ID] = true
			read = append(read, e.Data.Video["id"].(string))
		}
		if len(p.Data) > 0 {
			q.Set("after", p.Data[len(p.Data)-1].ID)
		}
		// Writes that finished before this page began are all in it or before.
		if finished && !p.HasMore {
			break
		}
	}
	if t.Failed() {
		return
	}
	if len(read) != writers*each {
		t.Fatalf("read %d events, %d videos were made", len(read), writers*each)
	}
	for w, ids := range made {
		if got := slices.DeleteFunc(slices.Clone(read), func(id string) bool { return !slices.Contains(ids, id) }); !slices.Equal(got, ids) {
			t.Fatalf("writer %d made %v, the log lists %v", w, ids, got)
		}
	}
	t.Logf("read %d events, %d pages of them while they were being written", len(read), during)
}

// jsonInto decodes a response body into v.
func jsonInto(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// TestEventLogSDK reads the log through the Go SDK's iterator against a real
// node: the same events as the API's pages, and a cursor that follows the
// log as it grows.
func TestEventLogSDK(t *testing.T) {
	h := start(t)
	startedLog(t, h)
	_, key := h.account("pro", 1000)
	c, err := client.New(h.base, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var made []string
	for range 5 {
		made = append(made, h.create(key, manualReq("duration_seconds", 5))["id"].(string))
	}
	expectAPIStatus(t, h.do("POST", "/v1/videos/"+made[1]+"/cancel", key, nil), http.StatusOK)

	read := func(p client.ListEventsParams) []client.Event {
		t.Helper()
		var out []client.Event
		for e, err := range c.Events(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	all := read(client.ListEventsParams{Limit: 2})
	if len(all) != 6 || all[5].Type != client.EventVideoCanceled || all[5].ID != fsm.EventID(made[1]) {
		t.Fatalf("the SDK read %d events: %+v", len(all), all)
	}
	for i, id := range made {
		if all[i].Type != client.EventVideoCreated || all[i].Data.Video.ID != id || all[i].Data.Video.Progress == nil {
			t.Fatalf("event %d: %+v, want video.created of %s with its place in the queue", i, all[i], id)
		}
	}
	if got := read(client.ListEventsParams{Types: []string{client.EventVideoCanceled, client.EventVideoFailed}}); len(got) != 1 || got[0].ID != all[5].ID {
		t.Fatalf("canceled or failed: %+v", got)
	}
	// Following the log: from the last event seen, only what came since.
	last := all[len(all)-1].ID
	if got := read(client.ListEventsParams{After: last}); len(got) != 0 {
		t.Fatalf("after the last event: %+v", got)
	}
	next := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	if got := read(client.ListEventsParams{After: last}); len(got) != 1 || got[0].Data.Video.ID != next {
		t.Fatalf("after the last event, once another video was made: %+v", got)
	}
	_, err = c.ListEvents(ctx, client.ListEventsParams{After: "evt_unknown"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != client.CodeInvalidRequest {
		t.Fatalf("after an unknown event: %v", err)
	}
}
