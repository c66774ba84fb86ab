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
	return func(yield func(Video, error) bool) {
		for {
			page, err := c.ListVideos(ctx, p)
			if err != nil {
				yield(Video{}, err)
				return
			}
			for _, v := range page.Data {
				if !yield(v, nil) {
					return
				}
			}
			if !page.HasMore {
				return
			}
			if len(page.Data) == 0 {
				yield(Video{}, fmt.Errorf("vidfarm: list videos: has_more with an empty page after %q", p.StartingAfter))
				return
			}
			p.StartingAfter = page.Data[len(page.Data)-1].ID
		}
	}
}
