package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// CreateAuto creates an auto video (a prompt becomes a narrated video). The
// call carries an Idempotency-Key (the caller's, or one the client makes and
// reuses on every retry), so retries never create a second video.
func (c *Client) CreateAuto(ctx context.Context, req AutoVideoRequest, opts ...CallOption) (*Video, error) {
	req.Mode = "auto"
	return c.create(ctx, req, opts)
}

// CreateManual creates a manual video (one model render). Retries are safe, as
// with CreateAuto.
func (c *Client) CreateManual(ctx context.Context, req ManualVideoRequest, opts ...CallOption) (*Video, error) {
	req.Mode = "manual"
	return c.create(ctx, req, opts)
}

func (c *Client) create(ctx context.Context, req any, opts []CallOption) (*Video, error) {
	var cl call
	for _, o := range opts {
		o(&cl)
	}
	if cl.idempotencyKey == "" {
		cl.idempotencyKey = NewIdempotencyKey()
	}
	var v Video
	if err := c.do(ctx, "POST", "/v1/videos", nil, req, cl.idempotencyKey, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// GetVideo reads a video.
func (c *Client) GetVideo(ctx context.Context, id string) (*Video, error) {
	if id == "" {
		return nil, errors.New("vidfarm: GetVideo: empty video id")
	}
	var v Video
	if err := c.do(ctx, "GET", "/v1/videos/"+url.PathEscape(id), nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// CancelVideo cancels a queued or processing video and returns it canceled,
// with the refund in Cancellation. Canceling a canceled video returns it again;
// a completed or failed one is an *Error with code video_not_cancelable.
func (c *Client) CancelVideo(ctx context.Context, id string) (*Video, error) {
	if id == "" {
		return nil, errors.New("vidfarm: CancelVideo: empty video id")
	}
	var v Video
	if err := c.do(ctx, "POST", "/v1/videos/"+url.PathEscape(id)+"/cancel", nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// RenderVideo renders a free account's preview once the account is on Pro or
// Max (POST /v1/videos/{id}/render): it returns the video queued and charged
// nothing. While the account is still free the answer is an *Error with code
// upgrade_required (its Links hold the upgrade address); a video that was
// not created as a preview is invalid_request. Calling it again returns the
// video as it stands and charges nothing, so the call is retried like a
// read.
func (c *Client) RenderVideo(ctx context.Context, id string) (*Video, error) {
	if id == "" {
		return nil, errors.New("vidfarm: RenderVideo: empty video id")
	}
	var v Video
	if err := c.do(ctx, "POST", "/v1/videos/"+url.PathEscape(id)+"/render", nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ListVideosParams filters GET /v1/videos. Zero values are left out.
type ListVideosParams struct {
	Status   string // one of the Status constants
	FolderID string
	// Limit is the page size, 1 to 100 (server default 20).
	Limit int
	// StartingAfter continues after this video id.
	StartingAfter string
}

func (p ListVideosParams) query() url.Values {
	q := url.Values{}
	if p.Status != "" {
		q.Set("status", p.Status)
	}
	if p.FolderID != "" {
		q.Set("folder_id", p.FolderID)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.StartingAfter != "" {
		q.Set("starting_after", p.StartingAfter)
	}
	return q
}

// ListVideos reads one page of the account's videos, newest first.
func (c *Client) ListVideos(ctx context.Context, p ListVideosParams) (*List[Video], error) {
	var l List[Video]
	if err := c.do(ctx, "GET", "/v1/videos", p.query(), nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Videos iterates over every video matching p, fetching page after page with
// starting_after while has_more. An error ends the iteration after it is
// yielded.
func (c *Client) Videos(ctx context.Context, p ListVideosParams) iter.Seq2[Video, error] {
	return pages(p.StartingAfter, "list videos", func(after string) ([]Video, bool, error) {
		p.StartingAfter = after
		l, err := c.ListVideos(ctx, p)
		if err != nil {
			return nil, false, err
		}
		return l.Data, l.HasMore, nil
	}, func(v Video) string { return v.ID })
}

// pages iterates over a cursor-paged list from the cursor after: fetch reads
// the page after a cursor, id names an item, which becomes the next cursor.
func pages[T any](after, what string, fetch func(after string) ([]T, bool, error), id func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for {
			items, more, err := fetch(after)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if !more {
				return
			}
			if len(items) == 0 {
				yield(zero, fmt.Errorf("vidfarm: %s: has_more with an empty page after %q", what, after))
				return
			}
			after = id(items[len(items)-1])
		}
	}
}
