package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// updates is where Wait learns of a video's changes: the events stream
// (GET /v1/videos/{id}/events), with polling as its fallback.
type updates interface {
	// next returns the video's state after the previous call's: at once on the
	// first call, later ones when it may have changed.
	next(ctx context.Context) (*Video, error)
}

// poller reads the video every poll_interval_seconds (or the client's
// WithPollInterval). A read that fails for a reason that passes (no answer,
// 429, 5xx) is tried again at that interval until the context ends: a wait
// outlives a server's restart or a leader election, where the call's own
// retries (seconds) do not.
type poller struct {
	c     *Client
	id    string
	wait  time.Duration // before the next read; 0 on the first
	fixed time.Duration
	every time.Duration // the video's poll_interval_seconds, once read
}

// defaultPoll is the interval before the video has said its own: the
// contract's "usually 5".
const defaultPoll = 5 * time.Second

func (p *poller) next(ctx context.Context) (*Video, error) {
	for {
		if err := sleep(ctx, p.wait); err != nil {
			return nil, err
		}
		v, err := p.c.GetVideo(ctx, p.id)
		if err == nil {
			p.every = time.Duration(max(v.PollIntervalSeconds, 1)) * time.Second
			p.wait = p.interval()
			return v, nil
		}
		if ctx.Err() != nil || !retryable(err) {
			return nil, err
		}
		p.wait = p.interval()
		if p.c.waitRetry != nil {
			p.c.waitRetry(err, p.wait)
		}
	}
}

// interval is the wait between reads.
func (p *poller) interval() time.Duration {
	switch {
	case p.fixed > 0:
		return p.fixed
	case p.every > 0:
		return p.every
	}
	return defaultPoll
}

// streamer reads the video's events stream, resuming with the last event's
// id after a break (on whichever node answers). When the stream cannot be
// had it reads the video by polling instead: once per break while the
// stream fails for want of a connection (every poll_interval_seconds), and
// for good once the server answers the stream with an error (an older
// server without the route, say).
type streamer struct {
	c      *Client
	id     string
	last   string
	es     *EventStream
	poll   *poller
	polled bool // the stream was refused: poll only
}

func (s *streamer) next(ctx context.Context) (*Video, error) {
	if s.polled {
		return s.poll.next(ctx)
	}
	if s.es == nil {
		es, err := s.c.VideoEvents(ctx, s.id, s.last)
		switch {
		case err == nil:
			s.es = es
		case ctx.Err() != nil:
			return nil, err
		case errors.Is(err, ErrStreamFinal):
			// The stream has nothing more: the video as it is ends the wait.
			s.polled = true
			return s.poll.next(ctx)
		default:
			var ae *Error
			if errors.As(err, &ae) && !ae.Retryable {
				s.polled = true
			}
			return s.poll.next(ctx)
		}
	}
	ev, err := s.es.Next()
	if err != nil {
		s.es.Close()
		s.es = nil
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The node went away or ended the stream: read the video once (at
		// the poll interval after the first time) and resume the stream.
		return s.poll.next(ctx)
	}
	s.last = ev.ID
	s.poll.wait = 0 // a later break reads at once
	return &ev.Video, nil
}

// close releases the stream of a wait that ends.
func (s *streamer) close() {
	if s.es != nil {
		s.es.Close()
	}
}

// Wait follows video id until it is final (completed, failed, canceled, or a
// free plan's preview) and returns it. It listens to the video's events
// stream, and polls every poll_interval_seconds (or WithPollInterval) while
// the stream cannot be had; a read that fails for a reason that passes (the
// server unreachable, 429, 5xx) is tried again at that interval until ctx
// ends (WithWaitRetry says when). A failed or canceled video is not an
// error: check Status. onChange, when not nil, is called with the first
// state seen and then with every state whose status or progress differs
// from the one before. Errors are ctx's, or an API error that retrying
// cannot change (404 for an id the account does not have, 401).
func (c *Client) Wait(ctx context.Context, id string, onChange func(Video)) (*Video, error) {
	s := &streamer{c: c, id: id, poll: &poller{c: c, id: id, fixed: c.pollInterval}}
	defer s.close()
	return c.wait(ctx, s, onChange)
}

// WaitPolling is Wait without the events stream: it reads the video every
// poll_interval_seconds (or WithPollInterval).
func (c *Client) WaitPolling(ctx context.Context, id string, onChange func(Video)) (*Video, error) {
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
