package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/models"
)

// sseEvent is one event of a text/event-stream ("comment" for a comment line).
type sseEvent struct{ name, data string }

// stream opens GET url with the cookie and reads its events into a channel,
// closed when the stream ends.
func stream(t *testing.T, url string, ck *http.Cookie) (*http.Response, <-chan sseEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	must(t, err, "build request")
	req.AddCookie(ck)
	res, err := http.DefaultClient.Do(req)
	must(t, err, "GET %s", url)
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ch <- sseEvent{name: "comment", data: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data += line[len("data: "):]
			}
		}
	}()
	return res, ch
}

// next waits for the first event named name for which ok holds.
func next(t *testing.T, ch <-chan sseEvent, name string, within time.Duration, ok func(string) bool) string {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, open := <-ch:
			if !open {
				t.Fatalf("the stream ended before a %s event", name)
			}
			if ev.name == name && ok(ev.data) {
				return ev.data
			}
		case <-timeout:
			t.Fatalf("no %s event within %s", name, within)
		}
	}
}

// loginCookie logs in to the console and returns the session cookie and
// its CSRF token.
func loginCookie(t *testing.T, base string) (*http.Cookie, string) {
	t.Helper()
	st, body, cks := send(t, "POST", base+"/console/login", `{"token": "`+adminToken+`"}`, nil, nil)
	if st != http.StatusOK || len(cks) != 1 {
		t.Fatalf("login: %d %s", st, body)
	}
	var s console.SessionJSON
	must(t, json.Unmarshal([]byte(body), &s), "login answer")
	return cks[0], s.CSRFToken
}

// TestEventsStream follows the farm page over real HTTP: the first snapshot
// at once, a node that registers in the next one, a heartbeat comment while
// nothing changes, and an end event when the session is logged out; no
// session, an unknown page or video are refused before any stream.
func TestEventsStream(t *testing.T) {
	f := startFarm(t, func(c *server.Config) { c.ConsoleEventsHeartbeat = 300 * time.Millisecond })
	base := "http://" + f.srv.AdminAddr()
	events := base + "/console/api/events"
	ck, csrf := loginCookie(t, base)

	for _, c := range []struct {
		name, query string
		ck          *http.Cookie
		want        int
	}{
		{"no session", "?page=farm", nil, http.StatusUnauthorized},
		{"forged cookie", "?page=farm", &http.Cookie{Name: console.CookieName, Value: "made-up"}, http.StatusUnauthorized},
		{"unknown page", "?page=nodes", ck, http.StatusBadRequest},
		{"video without id", "?page=video", ck, http.StatusBadRequest},
		{"unknown video", "?page=video&id=vid_nope", ck, http.StatusNotFound},
		{"bad limit", "?page=farm&limit=0", ck, http.StatusBadRequest},
	} {
		if st, body, _ := send(t, "GET", events+c.query, "", c.ck, nil); st != c.want || strings.Contains(body, "event:") {
			t.Errorf("%s: %d %s, want %d and no stream", c.name, st, body, c.want)
		}
	}

	res, ch := stream(t, events+"?page=farm&q=sse", ck)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var farm console.FarmJSON
	must(t, json.Unmarshal([]byte(next(t, ch, "snapshot", 5*time.Second, func(string) bool { return true })), &farm), "first snapshot")
	if farm.Matched != 0 || farm.GeneratedAt.IsZero() || farm.Self.NodeID != "cp1" {
		t.Fatalf("first snapshot: %d nodes, generated %v, served by %q; want none, a time, cp1", farm.Matched, farm.GeneratedAt, farm.Self.NodeID)
	}
	next(t, ch, "comment", 5*time.Second, func(d string) bool { return d == "heartbeat" })

	f.register("gpu-sse", models.IDs())
	f.register("gpu-other", models.IDs()) // not matched by q: the page's query holds
	must(t, json.Unmarshal([]byte(next(t, ch, "snapshot", 10*time.Second, func(d string) bool { return strings.Contains(d, `"gpu-sse"`) })), &farm), "snapshot")
	if farm.Matched != 1 || farm.Nodes[0].Name != "gpu-sse" {
		t.Fatalf("snapshot after the registration: %+v, want gpu-sse alone", farm.Nodes)
	}

	if st, body, _ := send(t, "POST", base+"/console/logout", "", ck, map[string]string{console.CSRFHeader: csrf}); st != http.StatusNoContent {
		t.Fatalf("logout: %d %s", st, body)
	}
	next(t, ch, "end", 5*time.Second, func(d string) bool { return strings.Contains(d, "log in again") })
	select {
	case _, open := <-ch:
		if open {
			t.Fatal("the stream went on after its end event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream stayed open after the logout")
	}
}
