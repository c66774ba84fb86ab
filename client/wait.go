package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// updates is where Wait learns of a video's changes. Polling is the only
// source today; an events stream (GET /v1/videos/{id}/events) will be another,
// with polling as its fallback, without changing Wait.
type updates interface {
	// next returns the video's state after the previous call's: at once on the
	// first call, later ones when it may have changed.
	next(ctx context.Context) (*Video, error)
}

// poller reads the video every poll_interval_seconds (or the client's
// WithPollInterval).
type poller struct {
	c     *Client
	id    string
	wait  time.Duration // before the next read; 0 on the first
	fixed time.Duration
}

func (p *poller) next(ctx context.Context) (*Video, error) {
	if err := sleep(ctx, p.wait); err != nil {
		return nil, err
	}
	v, err := p.c.GetVideo(ctx, p.id)
	if err != nil {
		return nil, err
	}
	p.wait = p.fixed
	if p.wait <= 0 {
		p.wait = time.Duration(max(v.PollIntervalSeconds, 1)) * time.Second
	}
	return v, nil
}

// Wait follows video id until it is final (completed, failed, canceled, or a
// free plan's preview) and returns it. A failed or canceled video is not an
// error: check Status. onChange, when not nil, is called with the first state
// seen and then with every state whose status or progress differs from the one
// before. Errors are ctx's, or an API error the client's retries did not get
// past.
func (c *Client) Wait(ctx context.Context, id string, onChange func(Video)) (*Video, error) {
	return c.wait(ctx, &poller{c: c, id: id, fixed: c.pollInterval}, onChange)
}

func (c *Client) wait(ctx context.Context, src updates, onChange func(Video)) (*Video, error) {
	var last []byte
	for {
		v, err := src.next(ctx)
		if err != nil {
			return nil, fmt.Errorf("vidfarm: wait for video: %w", err)
		}
		if onChange != nil {
			// Status and progress are what a watcher shows; signed URLs change
			// on every read and are not a change of the video.
			key, _ := json.Marshal(struct {
				S string
				P *VideoProgress
			}{v.Status, v.Progress})
			if string(key) != string(last) {
				last = key
				onChange(*v)
			}
		}
		if v.Final() {
			return v, nil
		}
	}
}
