package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vidfarm/vidfarm/client"
)

// fakeAPI is a test double of the public API as docs/tour.md ("One video through
// the API") and docs/api.md document it: the error envelope, Idempotency-Key
// replays with Idempotent-Replayed, 409 duplicate_request for another body,
// newest-first pages with starting_after/has_more, cancel with 409
// video_not_cancelable. A video advances one step per read: queued, processing
// (stage rendering at 50 %), completed. Each change is an event of the
// account's log (GET /v1/events, oldest first, paged with after).
type fakeAPI struct {
	mu       sync.Mutex
	key      string
	credits  int64
	videos   []*client.Video // oldest first
	events   []client.Event  // oldest first
	byKey    map[string]idem
	faults   []fault // consumed by the next requests, in order
	requests []seen
}

type idem struct {
	body []byte
	id   string
}

// fault replaces the answer of one request: drop closes the connection after
// the request was handled (the client sees a network error, the server did the
// work); otherwise an error envelope with this status and code.
type fault struct {
	drop       bool
	status     int
	code       string
	retryable  bool
	retryAfter string
}

type seen struct{ method, path, idemKey string }

const fakeKey = "vf_test_key"

func newFake(t *testing.T) (*fakeAPI, *httptest.Server) {
	f, srv := startFake()
	t.Cleanup(srv.Close)
	return f, srv
}

// startFake is newFake for examples, which have no testing.T: close the server.
func startFake() (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{key: fakeKey, credits: 1000, byKey: map[string]idem{}}
	return f, httptest.NewServer(f)
}

func (f *fakeAPI) addFaults(fs ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fs...)
}

func (f *fakeAPI) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.requests...)
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.videos)
}

func writeErr(w http.ResponseWriter, status int, code, msg string, retryable bool, details map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg, "retryable": retryable, "request_id": "req_fake", "details": details}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, seen{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key")})
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		writeErr(w, 401, "invalid_api_key", "The API key is not valid.", false, nil)
		return
	}
	var ft fault
	if len(f.faults) > 0 {
		ft, f.faults = f.faults[0], f.faults[1:]
	}
	if ft.status != 0 {
		if ft.retryAfter != "" {
			w.Header().Set("Retry-After", ft.retryAfter)
		}
		writeErr(w, ft.status, ft.code, "injected", ft.retryable, nil)
		return
	}
	rec := httptest.NewRecorder()
	f.route(rec, r)
	if ft.drop {
		// The work is done; the answer is lost on the way back.
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (f *fakeAPI) route(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1/videos")
	switch {
	case r.Method == "GET" && r.URL.Path == "/v1/me":
		writeJSON(w, 200, client.Account{Object: "account", ID: "acct_fake", Name: "fake", Plan: "pro", Premium: true, Credits: f.credits})
	case r.Method == "GET" && r.URL.Path == "/v1/events":
		f.listEvents(w, r)
	case r.Method == "POST" && p == "":
		f.create(w, r)
	case r.Method == "GET" && p == "":
		f.list(w, r)
	case r.Method == "GET" && strings.Count(p, "/") == 1:
		v := f.find(p[1:])
		if v == nil {
			writeErr(w, 404, "not_found", "No such video.", false, nil)
			return
		}
		f.advance(v)
		writeJSON(w, 200, v)
	case r.Method == "POST" && strings.HasSuffix(p, "/cancel"):
		v := f.find(strings.TrimSuffix(p[1:], "/cancel"))
		switch {
		case v == nil:
			writeErr(w, 404, "not_found", "No such video.", false, nil)
		case v.Status == client.StatusCompleted || v.Status == client.StatusFailed:
			writeErr(w, 409, "video_not_cancelable", "The video is "+v.Status+".", false, nil)
		default:
			if v.Status != client.StatusCanceled {
				v.Status, v.Progress = client.StatusCanceled, nil
				v.Cancellation = &client.VideoCancellation{CreditsRefunded: v.CreditsCharged, CanceledAt: 1763700100}
				f.credits += v.CreditsCharged
				f.event(client.EventVideoCanceled, v)
			}
			writeJSON(w, 200, v)
		}
	default:
		writeErr(w, 404, "not_found", "No route "+r.Method+" "+r.URL.Path, false, nil)
	}
}

func (f *fakeAPI) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Mode            string `json:"mode"`
		Prompt          string `json:"prompt"`
		DurationSeconds int    `json:"duration_seconds"`
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, &req) != nil || req.Prompt == "" {
		writeErr(w, 400, "invalid_request", "prompt is required.", false, map[string]any{"field": "prompt"})
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if prev, ok := f.byKey[key]; ok && key != "" {
		if string(prev.body) != string(body) {
			writeErr(w, 409, "duplicate_request", "The key was used with another body.", false, map[string]any{"existing_video_id": prev.id})
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, 201, f.find(prev.id))
		return
	}
	cost := int64(max(req.DurationSeconds, 5)) * 2
	if cost > f.credits {
		writeErr(w, 402, "insufficient_credits", "Not enough credits.", false,
			map[string]any{"required_credits": cost, "remaining_credits": f.credits})
		return
	}
	f.credits -= cost
	v := &client.Video{ID: "vid_" + strconv.Itoa(len(f.videos)+1), Object: "video", Mode: req.Mode, Status: client.StatusQueued,
		Prompt: req.Prompt, DurationSeconds: max(req.DurationSeconds, 5), CreditsCharged: cost, PollIntervalSeconds: 5,
		CreatedAt: 1763700000 + int64(len(f.videos)), Progress: &client.VideoProgress{QueuePosition: 1}}
	f.videos = append(f.videos, v)
	f.event(client.EventVideoCreated, v)
	if key != "" {
		f.byKey[key] = idem{body: body, id: v.ID}
	}
	writeJSON(w, 201, v)
}

func (f *fakeAPI) advance(v *client.Video) {
	switch v.Status {
	case client.StatusQueued:
		v.Status, v.Progress = client.StatusProcessing, &client.VideoProgress{Percent: 50, Stage: "rendering"}
		f.event(client.EventVideoProcessing, v)
	case client.StatusProcessing:
		v.Status, v.Progress, v.VideoURL = client.StatusCompleted, nil, "https://files.example/"+v.ID+".mp4"
		f.event(client.EventVideoCompleted, v)
	}
}

// event appends v's event of type typ to the log.
func (f *fakeAPI) event(typ string, v *client.Video) {
	f.events = append(f.events, client.Event{ID: fmt.Sprintf("evt_%d", len(f.events)+1), Object: "event", Type: typ,
		Created: 1763700000 + int64(len(f.events)), Data: client.EventData{Video: *v}})
}

// listEvents answers GET /v1/events: after an event id, of the types asked
// (comma-separated), limit at a time.
func (f *fakeAPI) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if s := q.Get("limit"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	start := 0
	if after := q.Get("after"); after != "" {
		start = -1
		for i, e := range f.events {
			if e.ID == after {
				start = i + 1
			}
		}
		if start < 0 {
			writeErr(w, 400, "invalid_request", "No event "+after+".", false, map[string]any{"field": "after"})
			return
		}
	}
	var match []client.Event
	for _, e := range f.events[start:] {
		if t := q.Get("type"); t == "" || slices.Contains(strings.Split(t, ","), e.Type) {
			match = append(match, e)
		}
	}
	page := match[:min(limit, len(match))]
	writeJSON(w, 200, client.EventList{Object: "list", Data: page, Count: len(page), HasMore: len(match) > limit})
}

func (f *fakeAPI) find(id string) *client.Video {
	for _, v := range f.videos {
		if v.ID == id {
			return v
		}
	}
	return nil
}

func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			writeErr(w, 400, "invalid_request", "limit is 1 to 100.", false, map[string]any{"field": "limit"})
			return
		}
		limit = n
	}
	var match []client.Video
	for i := len(f.videos) - 1; i >= 0; i-- {
		if s := q.Get("status"); s == "" || f.videos[i].Status == s {
			match = append(match, *f.videos[i])
		}
	}
	start := 0
	if after := q.Get("starting_after"); after != "" {
		start = -1
		for i, v := range match {
			if v.ID == after {
				start = i + 1
			}
		}
		if start < 0 {
			writeErr(w, 400, "invalid_request", fmt.Sprintf("No video %s.", after), false, map[string]any{"field": "starting_after"})
			return
		}
	}
	page := match[start:min(start+limit, len(match))]
	writeJSON(w, 200, client.List[client.Video]{Object: "list", Data: page, Count: len(page), Total: len(match), HasMore: start+limit < len(match)})
}
