package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
)

// streamAPI serves one video's events stream as the API documents it, over
// a sequence of states: each stream sends the states after Last-Event-ID,
// and the first stream breaks off after `breakAfter` events; GET of the
// video answers the latest state sent. With `refuse`, the stream answers
// that error instead (polling is then what Wait has).
type streamAPI struct {
	mu         sync.Mutex
	states     []client.Video
	breakAfter int
	refuse     int // status of the stream's answer; 0 serves it
	lastIDs    []string
	gets       int
	at         int // states[at] is what GET answers
}

func (s *streamAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/v1/videos/vid_1/events":
		if s.refuse != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(s.refuse)
			fmt.Fprintf(w, `{"error":{"code":"not_found","message":"no such route","retryable":false,"request_id":"req_1"}}`)
			return
		}
		last := r.Header.Get("Last-Event-ID")
		s.lastIDs = append(s.lastIDs, last)
		from := 0
		if last != "" {
			fmt.Sscanf(last, "%d-", &from)
			from++
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := from; i < len(s.states); i++ {
			if s.breakAfter > 0 && i == s.breakAfter {
				s.breakAfter = 0
				return // the node went away mid-stream
			}
			b, _ := json.Marshal(s.states[i])
			fmt.Fprintf(w, ": heartbeat\n\nid: %d-0000000%d\nevent: video\ndata: %s\n\n", i, i%10, b)
			s.at = i
		}
	case "/v1/videos/vid_1":
		s.gets++
		if s.refuse != 0 && s.at < len(s.states)-1 {
			s.at++ // the video moves on between polls
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(s.states[s.at])
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func videoStates() []client.Video {
	p := func(stage string, pct int) *client.VideoProgress {
		return &client.VideoProgress{Stage: stage, Percent: pct}
	}
	return []client.Video{
		{ID: "vid_1", Status: "queued", Progress: p("", 0)},
		{ID: "vid_1", Status: "processing", Progress: p("rendering", 10)},
		{ID: "vid_1", Status: "processing", Progress: p("rendering", 60)},
		{ID: "vid_1", Status: "processing", Progress: p("finalizing", 90)},
		{ID: "vid_1", Status: "completed", VideoURL: "https://files.example/v.mp4"},
	}
}

func waitSeeing(t *testing.T, api *streamAPI) []string {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL)
	var seen []string
	final, err := c.Wait(context.Background(), "vid_1", func(v client.Video) {
		s := v.Status
		if v.Progress != nil {
			s += fmt.Sprintf("/%s/%d", v.Progress.Stage, v.Progress.Percent)
		}
		seen = append(seen, s)
	})
	if err != nil || final.Status != "completed" || final.VideoURL == "" {
		t.Fatalf("Wait: %+v, %v", final, err)
	}
	return seen
}

var everyState = []string{"queued//0", "processing/rendering/10", "processing/rendering/60", "processing/finalizing/90", "completed"}

// Wait follows the events stream; when the stream breaks off it reads the
// video once and resumes the stream with the last event's id, so every
// change is reported once and in order.
func TestWaitFollowsTheEventsStream(t *testing.T) {
	api := &streamAPI{states: videoStates(), breakAfter: 2}
	seen := waitSeeing(t, api)
	if !slices.Equal(seen, everyState) {
		t.Errorf("saw %v, want %v", seen, everyState)
	}
	if want := []string{"", "1-00000001"}; !slices.Equal(api.lastIDs, want) {
		t.Errorf("streams opened with Last-Event-ID %q, want %q", api.lastIDs, want)
	}
	if api.gets != 1 {
		t.Errorf("%d reads of the video, want 1 (at the break)", api.gets)
	}
}

// A server that refuses the stream (an older one without the route) is
// polled instead.
func TestWaitPollsWhenTheStreamIsRefused(t *testing.T) {
	api := &streamAPI{states: videoStates(), refuse: http.StatusNotFound}
	seen := waitSeeing(t, api)
	if want := everyState[1:]; !slices.Equal(seen, want) {
		t.Errorf("saw %v, want %v", seen, want)
	}
	if api.gets != len(everyState)-1 {
		t.Errorf("%d reads, want %d", api.gets, len(everyState)-1)
	}
}

// A wait outlives a server that goes away for longer than a call's own
// retries (a restart, an election): it reads again at the poll interval,
// saying why through WithWaitRetry, until the server answers; a 404 still
// ends it.
func TestWaitOutlivesAServerAway(t *testing.T) {
	api := &streamAPI{states: videoStates(), refuse: http.StatusNotFound}
	first := httptest.NewServer(api)
	addr := first.Listener.Addr().String()
	var mu sync.Mutex
	var retries []error
	again := make(chan struct{})
	c, err := client.New(first.URL, "vf_test_key", client.WithMaxAttempts(1), client.WithPollInterval(20*time.Millisecond),
		client.WithWaitRetry(func(err error, next time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			retries = append(retries, err)
			if len(retries) == 3 {
				close(again) // the server comes back
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-again
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		api.mu.Lock()
		api.at = len(api.states) - 2 // it rendered meanwhile
		api.mu.Unlock()
		second := &httptest.Server{Listener: l, Config: &http.Server{Handler: api}}
		second.Start()
		t.Cleanup(second.Close)
	}()
	var once sync.Once
	final, err := c.Wait(context.Background(), "vid_1", func(client.Video) {
		once.Do(first.Close) // the server goes away after the first read
	})
	if err != nil || final.Status != "completed" {
		t.Fatalf("Wait: %+v, %v", final, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) < 3 {
		t.Fatalf("%d retries reported, want 3 or more", len(retries))
	}
	var ae *client.Error
	if errors.As(retries[0], &ae) {
		t.Errorf("the first retry's error is an API error (%v), want no answer at all", retries[0])
	}

	// An answer that will not change ends the wait at once.
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	c2 := newTestClient(t, missing.URL)
	if _, err := c2.Wait(context.Background(), "vid_1", nil); err == nil {
		t.Fatal("Wait on a 404: no error")
	}
}
