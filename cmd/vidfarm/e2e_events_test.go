package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
)

// Three server processes and a render agent: a client follows a video's
// events on the leader, the leader is SIGKILLed mid-render, and the client
// resumes with Last-Event-ID on a survivor. It sees every change once and in
// order, the same changes under the same ids as a stream that a follower
// served from its own state the whole time, and the stream ends at the
// completed video.
func TestE2EEventsAcrossLeaderKill(t *testing.T) {
	c := newChaosCluster(t, 3)
	c.extra = func(int) []string { return []string{"--events-heartbeat", "300ms"} }
	c.startAll()
	leader := c.waitLeader(30*time.Second, c.nodes...)
	ref, other := (leader+1)%3, (leader+2)%3
	startProc(t, "agent", []string{"agent", "--server", c.nodes[ref].agentURL(), "--token", e2eAgentToken, "--name", "events-agent",
		"--virtual-gpus", "1", "--work-dir", filepath.Join(c.dir, "agent"), "--log-level", "info"}, nil, "agent running")
	a, err := c.nodes[leader].adminClient().CreateAccount(context.Background(), "events", "pro", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	sdk := func(n int) *client.Client {
		cl, err := client.New(c.nodes[n].publicURL(), a.APIKey, client.WithStreamIdle(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	ctx := context.Background()
	v, err := sdk(leader).CreateManual(ctx, client.ManualVideoRequest{Prompt: "a fox in the snow", Model: e2eModel,
		Resolution: e2eResolution, AspectRatio: e2eAspect, DurationSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	open := func(n int, last string) (*client.EventStream, error) { return sdk(n).VideoEvents(ctx, v.ID, last) }
	var refStream *client.EventStream
	eventually(t, 20*time.Second, "a stream on a follower", func() bool { refStream, err = open(ref, ""); return err == nil })
	defer refStream.Close()
	refEvents := make(chan []client.VideoEvent, 1)
	go func() { refEvents <- readAll(refStream) }()

	var st *client.EventStream // a 503 while an election settles is retried
	eventually(t, 20*time.Second, "a stream on the leader", func() bool { st, err = open(leader, ""); return err == nil })
	var got []client.VideoEvent
	for len(got) == 0 || got[len(got)-1].Video.Status != client.StatusProcessing {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("the stream on the leader: %v after %s", err, eventsText(got))
		}
		got = append(got, ev)
	}
	c.kill(leader)
	// The killed leader's stream breaks; the client resumes on a survivor.
	rest := readAll(st)
	got = append(got, rest...)
	var resumed *client.EventStream
	eventually(t, 30*time.Second, "the client resumes on a survivor", func() bool {
		for _, n := range []int{other, ref} {
			if resumed, err = open(n, got[len(got)-1].ID); err == nil {
				return true
			}
		}
		return false
	})
	got = append(got, readAll(resumed)...)
	want := <-refEvents
	if last := got[len(got)-1]; last.Video.Status != client.StatusCompleted || last.Video.VideoURL == "" {
		t.Fatalf("the client's events ended at %s", eventsText(got))
	}
	// The follower's stream began before the client's: compare the changes
	// after the client's first event.
	var after []client.VideoEvent
	for _, ev := range want {
		if eventIndex(t, ev) > eventIndex(t, got[0]) {
			after = append(after, ev)
		}
	}
	for i := 1; i < len(got); i++ {
		if eventIndex(t, got[i]) <= eventIndex(t, got[i-1]) {
			t.Fatalf("the client's events are not in order: %s", eventsText(got))
		}
	}
	if eventsText(got[1:]) != eventsText(after) {
		t.Fatalf("the client's changes differ from the follower's stream:\n client   %s\n follower %s", eventsText(got), eventsText(want))
	}
}

// readAll reads a stream to its end: a clean end, or a break (a killed node).
func readAll(s *client.EventStream) []client.VideoEvent {
	var out []client.VideoEvent
	for {
		ev, err := s.Next()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

func eventIndex(t *testing.T, ev client.VideoEvent) uint64 {
	t.Helper()
	idx, _, _ := strings.Cut(ev.ID, "-")
	n, err := strconv.ParseUint(idx, 10, 64)
	if err != nil {
		t.Fatalf("event id %q", ev.ID)
	}
	return n
}

func eventsText(evs []client.VideoEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "[%s %s", ev.ID, ev.Video.Status)
		if p := ev.Video.Progress; p != nil {
			fmt.Fprintf(&b, " %s %d%% pos %d %s", p.Stage, p.Percent, p.QueuePosition, p.Reason)
		}
		b.WriteString("] ")
	}
	return b.String()
}
