package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadServer is a loopback stand-in for the public API: creates are held
// until release is closed; every third is refused with rate_limited;
// a video is completed on its third poll.
type loadServer struct {
	creates atomic.Int64
	release chan struct{}
	mu      sync.Mutex
	polls   map[string]int
}

func (s *loadServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/videos":
		n := s.creates.Add(1)
		<-s.release
		if n%3 == 0 {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":"rate_limited","message":"slow down"}}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"vid_%d","status":"queued","poll_interval_seconds":5}`, n)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/videos/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/videos/")
		s.mu.Lock()
		s.polls[id]++
		n := s.polls[id]
		s.mu.Unlock()
		status := "processing"
		if n >= 3 {
			status = "completed"
		}
		fmt.Fprintf(w, `{"id":%q,"status":%q}`, id, status)
	default:
		http.NotFound(w, r)
	}
}

func TestRunLoadOpenLoop(t *testing.T) {
	s := &loadServer{release: make(chan struct{}), polls: map[string]int{}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	// Open loop: all 10 creates go out while none has been answered (a
	// closed loop would wait for the first). Release them once all arrived.
	go func() {
		for s.creates.Load() < 10 {
			time.Sleep(5 * time.Millisecond) // polling the counter, not waiting for an event
		}
		close(s.release)
	}()
	var last LoadProgress
	rep, err := RunLoad(context.Background(), LoadConfig{
		BaseURL: srv.URL, APIKeys: []string{"k"}, Rate: 20, Duration: 500 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, Progress: func(p LoadProgress) { last = p },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if rep.Sent != 10 || rep.Accepted != 7 || rep.Rejected["rate_limited"] != 3 {
		t.Fatalf("sent %d accepted %d rejected %v", rep.Sent, rep.Accepted, rep.Rejected)
	}
	if rep.Outcomes["completed"] != 7 || rep.TimeToCompleted.Count != 7 || rep.PollLatency.Count != 21 {
		t.Fatalf("outcomes %v, ttc %d, polls %d", rep.Outcomes, rep.TimeToCompleted.Count, rep.PollLatency.Count)
	}
	// Latency counts from the intended send time: the first create was
	// meant for t=0 and answered only after the tenth, meant for t=450 ms,
	// had arrived.
	if rep.CreateLatency.Max < 450 || rep.CreateLatency.Count != 10 {
		t.Fatalf("create latency %+v: the held first request must show at least 450 ms", rep.CreateLatency)
	}
	if last.Sent != 10 || last.Completed != 7 || last.InProgress != 0 {
		t.Fatalf("last progress %+v", last)
	}
}

func TestRunLoadDrainLeavesUnfinished(t *testing.T) {
	s := &loadServer{release: make(chan struct{}), polls: map[string]int{}}
	close(s.release)
	srv := httptest.NewServer(s)
	defer srv.Close()
	// The server's poll interval (5 s) is longer than the drain: the two
	// accepted videos are never seen completed.
	rep, err := RunLoad(context.Background(), LoadConfig{
		BaseURL: srv.URL, APIKeys: []string{"k"}, Rate: 10, Duration: 300 * time.Millisecond, Drain: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Accepted != 2 || rep.Outcomes["unfinished"] != 2 || rep.TimeToCompleted.Count != 0 {
		t.Fatalf("accepted %d, outcomes %v", rep.Accepted, rep.Outcomes)
	}
}

func TestRunLoadRejectsBadConfig(t *testing.T) {
	ok := LoadConfig{BaseURL: "http://127.0.0.1:1", APIKeys: []string{"k"}, Rate: 1, Duration: time.Second}
	for name, edit := range map[string]func(c *LoadConfig){
		"no url":   func(c *LoadConfig) { c.BaseURL = "" },
		"no key":   func(c *LoadConfig) { c.APIKeys = nil },
		"rate":     func(c *LoadConfig) { c.Rate = 0 },
		"duration": func(c *LoadConfig) { c.Duration = 0 },
		"too many": func(c *LoadConfig) { c.Rate, c.Duration = 100_000, time.Hour },
		"drain":    func(c *LoadConfig) { c.Drain = -1 },
	} {
		c := ok
		edit(&c)
		if _, err := RunLoad(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
