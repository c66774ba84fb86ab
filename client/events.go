package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
	"strings"
)

// Event types of videos. The webhooks deliver Completed, Failed and
// Canceled to the endpoints subscribed to them; the event log (Events)
// lists every type, webhook.disabled included (webhooks.go).
const (
	EventVideoCreated    = "video.created"
	EventVideoProcessing = "video.processing"
	EventVideoCompleted  = "video.completed"
	EventVideoFailed     = "video.failed"
	EventVideoCanceled   = "video.canceled"
)

// ListEventsParams selects a page of the account's event log (GET
// /v1/events). Zero values are left out.
type ListEventsParams struct {
	// After continues after this event id; empty starts at the oldest event
	// kept (30 days).
	After string
	// Types keeps only events of these types (the EventVideo… constants).
	Types []string
	// Limit is the page size, 1 to 100 (server default 20).
	Limit int
}

func (p ListEventsParams) query() url.Values {
	q := url.Values{}
	if p.After != "" {
		q.Set("after", p.After)
	}
	if len(p.Types) > 0 {
		q.Set("type", strings.Join(p.Types, ","))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	return q
}

// EventList is one page of the event log (the EventList schema): oldest
// first, without a total.
type EventList struct {
	Object  string  `json:"object"`
	Data    []Event `json:"data"`
	Count   int     `json:"count"`
	HasMore bool    `json:"has_more"`
}

// ListEvents reads one page of the account's event log, oldest first. A
// final event has the id its webhook deliveries carry.
func (c *Client) ListEvents(ctx context.Context, p ListEventsParams) (*EventList, error) {
	var l EventList
	if err := c.do(ctx, "GET", "/v1/events", p.query(), nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Events iterates over the account's events after p.After, oldest first,
// page after page while has_more. An event written meanwhile comes after
// the ones already yielded, so to follow the log keep the last event's ID
// and iterate again later with it as After: every event is seen once. An
// error ends the iteration after it is yielded.
func (c *Client) Events(ctx context.Context, p ListEventsParams) iter.Seq2[Event, error] {
	return pages(p.After, "list events", func(after string) ([]Event, bool, error) {
		p.After = after
		l, err := c.ListEvents(ctx, p)
		if err != nil {
			return nil, false, err
		}
		return l.Data, l.HasMore, nil
	}, func(e Event) string { return e.ID })
}
