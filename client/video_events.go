package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ErrStreamFinal is what VideoEvents returns when the server answers 204: the
// Last-Event-ID sent already names the video's final state, so there is
// nothing more to stream.
var ErrStreamFinal = errors.New("vidfarm: the video's final state was already received")

// DefaultStreamIdle is how long an events stream may stay silent (no event,
// no heartbeat, which the server sends every 15 s) before the client gives
// it up as dead.
const DefaultStreamIdle = 45 * time.Second

// maxEventLine bounds one line of an events stream (a video object).
const maxEventLine = 1 << 20

// VideoEvent is one change of a video on its events stream.
type VideoEvent struct {
	// ID names the change; send it as lastEventID to resume after it, on
	// any node of the farm.
	ID string
	// Video is the video after the change, as GetVideo answers it.
	Video Video
}

// EventStream reads GET /v1/videos/{id}/events. Close it when done.
type EventStream struct {
	body io.ReadCloser
	r    *bufio.Reader
	idle *time.Timer
	// idleD is how long a silence may last; a zero value never times out.
	idleD     time.Duration
	closeOnce sync.Once
	timedOut  bool
	mu        sync.Mutex
}

// WithStreamIdle sets how long an events stream may stay silent before the
// client treats it as broken (default DefaultStreamIdle).
func WithStreamIdle(d time.Duration) Option { return func(c *Client) { c.streamIdle = d } }

// VideoEvents opens the events stream of video id: the video as it now is,
// then each change of its status, stage, percent, queue position or wait
// reason; the stream ends (Next returns io.EOF) after a final state.
// lastEventID, when not empty, resumes after that event instead, on whichever
// node answers. It makes one attempt: an error answer is an *Error, and
// ErrStreamFinal says the client already holds the final state. With
// WithMembers, a member that gave no answer sends the next stream to the
// member after it.
func (c *Client) VideoEvents(ctx context.Context, id, lastEventID string) (*EventStream, error) {
	at := c.streams.At()
	u := *at
	u.Path += "/v1/videos/" + url.PathEscape(id) + "/events"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("vidfarm: events of %s: %w", id, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// The client's timeout bounds whole calls; a stream lasts as long as the
	// render, and the idle timer below finds a dead one.
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		c.streams.Failover(ctx, at)
		return nil, &netError{err: fmt.Errorf("vidfarm: events of %s: %w", id, err)}
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		resp.Body.Close()
		return nil, ErrStreamFinal
	case resp.StatusCode >= 300:
		c.streams.PassRemoved(ctx, at, resp.Header)
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		return nil, parseError(resp.StatusCode, b, parseRetryAfter(resp.Header.Get("Retry-After")), resp.Header.Get("X-Request-Id"))
	case !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		resp.Body.Close()
		return nil, fmt.Errorf("vidfarm: events of %s: answered %q, not an event stream", id, resp.Header.Get("Content-Type"))
	}
	s := &EventStream{body: resp.Body, r: bufio.NewReader(resp.Body), idleD: c.streamIdle}
	if s.idleD == 0 {
		s.idleD = DefaultStreamIdle
	}
	if s.idleD > 0 {
		s.idle = time.AfterFunc(s.idleD, func() {
			s.mu.Lock()
			s.timedOut = true
			s.mu.Unlock()
			s.Close()
		})
	}
	return s, nil
}

// Next returns the next event, skipping heartbeats. io.EOF: the stream ended
// after the video's final state, or the server ended it (it shuts down);
// resume with the last event's ID.
func (s *EventStream) Next() (VideoEvent, error) {
	var id string
	var data bytes.Buffer
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			s.mu.Lock()
			idle := s.timedOut
			s.mu.Unlock()
			switch {
			case idle:
				return VideoEvent{}, &netError{err: errors.New("vidfarm: the events stream was silent for too long")}
			case errors.Is(err, bufio.ErrBufferFull):
				// A line longer than the reader's buffer: gather it.
				rest, err2 := s.r.ReadBytes('\n')
				if err2 != nil || len(line)+len(rest) > maxEventLine {
					return VideoEvent{}, fmt.Errorf("vidfarm: events stream: an overlong line: %w", errors.Join(err, err2))
				}
				line = append(append([]byte{}, line...), rest...)
			case errors.Is(err, io.EOF):
				return VideoEvent{}, io.EOF
			default:
				return VideoEvent{}, &netError{err: fmt.Errorf("vidfarm: events stream: %w", err)}
			}
		}
		if s.idle != nil {
			s.idle.Reset(s.idleD)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0: // end of an event
			if data.Len() == 0 {
				id = ""
				continue
			}
			var ev VideoEvent
			if err := json.Unmarshal(data.Bytes(), &ev.Video); err != nil {
				return VideoEvent{}, fmt.Errorf("vidfarm: events stream: decode event %s: %w", id, err)
			}
			ev.ID = id
			return ev, nil
		case line[0] == ':': // a comment: the heartbeat
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "id":
				id = string(value)
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(value)
			}
		}
	}
}

// Close ends the stream.
func (s *EventStream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.idle != nil {
			s.idle.Stop()
		}
		err = s.body.Close()
	})
	return err
}
