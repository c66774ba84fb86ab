package client_test

import (
	"context"
	"slices"
	"testing"

	"github.com/vidfarm/vidfarm/client"
)

// TestEventsIterator: the iterator follows after from page to page, sends
// the types as one comma-separated filter, stops when the caller stops,
// and yields the API's refusal of an unknown cursor as an *Error.
func TestEventsIterator(t *testing.T) {
	f, srv := newFake(t)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	var created []string
	for range 7 {
		v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "p"})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, v.ID)
	}
	if _, err := c.CancelVideo(ctx, created[2]); err != nil {
		t.Fatal(err)
	}
	read := func(p client.ListEventsParams) (ids, videos []string) {
		t.Helper()
		for e, err := range c.Events(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			ids, videos = append(ids, e.ID), append(videos, e.Data.Video.ID)
		}
		return ids, videos
	}
	before := len(f.seen())
	ids, videos := read(client.ListEventsParams{Limit: 3})
	if want := append(slices.Clone(created), created[2]); !slices.Equal(videos, want) {
		t.Errorf("iterated the videos of %v, want %v", videos, want)
	}
	if pages := len(f.seen()) - before; pages != 3 {
		t.Errorf("%d page requests for 8 events at 3 a page, want 3", pages)
	}
	if _, got := read(client.ListEventsParams{Types: []string{client.EventVideoCanceled, client.EventVideoCompleted}}); !slices.Equal(got, created[2:3]) {
		t.Errorf("canceled or completed: %v", got)
	}
	if got, _ := read(client.ListEventsParams{After: ids[5]}); !slices.Equal(got, ids[6:]) {
		t.Errorf("after %s: %v, want %v", ids[5], got, ids[6:])
	}
	n := 0
	for range c.Events(ctx, client.ListEventsParams{Limit: 2}) {
		if n++; n == 3 {
			break
		}
	}
	for _, err := range c.Events(ctx, client.ListEventsParams{After: "evt_unknown"}) {
		if !client.IsCode(err, client.CodeInvalidRequest) {
			t.Errorf("an unknown cursor: %v, want invalid_request", err)
		}
	}
}
