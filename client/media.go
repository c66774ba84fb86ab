package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Avatars, speech samples, brand kits, uploads and assets.
//
// Retries: only video creates carry an Idempotency-Key, so the creates here
// that record something (CreateAvatar, CreateSpeech, CreateBrandKit,
// CreateAsset) are sent once and never retried: a retry after a lost answer
// would make a second avatar, sample, kit or asset. Their errors keep the
// server's Retryable and RetryAfter for the caller to act on. The calls a
// repeat cannot harm are retried like reads: CreateUpload and
// BrandKitFromURL record nothing, CompleteAsset answers a ready asset
// unchanged, a delete deletes one object however often it is sent (a 404
// to a retry is taken as deleted, as DeleteWebhook does), and a PUT of the
// same bytes stores them again (retried only when the body can be rewound).

// ListAvatarsParams filters GET /v1/avatars. Zero values are left out.
// While HasMore is true, the next page starts after the last avatar's id
// (StartingAfter, with the same filters).
type ListAvatarsParams struct {
	View          string // AvatarViewCharacters (server default) or AvatarViewCatalogue
	Search        string // text in the id or name, case-insensitive
	Gender        string // female or male
	Limit         int    // 1 to 100 (server default 20)
	StartingAfter string // the id of the last avatar of the previous page
}

func (p ListAvatarsParams) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"view": p.View, "search": p.Search, "gender": p.Gender, "starting_after": p.StartingAfter} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	return q
}

// ListAvatars reads the avatars a video can use: the account's own (newest
// first, in every status) then the stock presenters, or with
// AvatarViewCatalogue the stock presenters only.
func (c *Client) ListAvatars(ctx context.Context, p ListAvatarsParams) (*List[Avatar], error) {
	var l List[Avatar]
	if err := c.do(ctx, "GET", "/v1/avatars", p.query(), nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// GetAvatar reads a stock presenter or one of the account's avatars; poll
// it at its PollIntervalSeconds until Final.
func (c *Client) GetAvatar(ctx context.Context, id string) (*Avatar, error) {
	return get[Avatar](ctx, c, "/v1/avatars/", "avatar", id)
}

// CreateAvatar asks the farm to make an avatar and returns it pending: a
// render node draws it (AvatarKindPrompt) or crops the photo
// (AvatarKindPhoto); poll GetAvatar until it is ready. Avatars cost no
// credits but share the media rate limit. The call is sent once, never
// retried: the server takes no Idempotency-Key here, and a retry after a
// lost answer would make a second avatar.
func (c *Client) CreateAvatar(ctx context.Context, req CreateAvatarRequest) (*Avatar, error) {
	var a Avatar
	if err := c.sendOnce(ctx, "POST", "/v1/avatars", req, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// CreateSpeech asks a render node to speak req.Text. The server waits for
// the audio (20 s by default) and returns the sample completed, with
// AudioURL; past the wait it returns the sample queued or processing, to
// poll with GetSpeech. A sample the node could not speak is an *Error
// (502 upstream_error, details.speech_id). The call is sent once, never
// retried: a retry after a lost answer would queue a second sample.
func (c *Client) CreateSpeech(ctx context.Context, req CreateSpeechRequest) (*Speech, error) {
	var s Speech
	if err := c.sendOnce(ctx, "POST", "/v1/voices/speech", req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSpeech reads a speech sample as it stands. A sample is kept for 7
// days, then answers 404 not_found.
func (c *Client) GetSpeech(ctx context.Context, id string) (*Speech, error) {
	return get[Speech](ctx, c, "/v1/voices/speech/", "speech", id)
}

// ListBrandKitsParams pages GET /v1/brand-kits. Zero values are left out.
type ListBrandKitsParams struct {
	Limit         int    // 1 to 100 (server default 20)
	StartingAfter string // a kit id: the page after it
}

// ListBrandKits reads one page of the account's brand kits, newest first.
func (c *Client) ListBrandKits(ctx context.Context, p ListBrandKitsParams) (*List[BrandKit], error) {
	var l List[BrandKit]
	if err := c.do(ctx, "GET", "/v1/brand-kits", pageQuery(p.Limit, p.StartingAfter), nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// BrandKits iterates over every brand kit after p.StartingAfter, page after
// page while has_more. An error ends the iteration after it is yielded.
func (c *Client) BrandKits(ctx context.Context, p ListBrandKitsParams) iter.Seq2[BrandKit, error] {
	return pages(p.StartingAfter, "list brand kits", func(after string) ([]BrandKit, bool, error) {
		p.StartingAfter = after
		l, err := c.ListBrandKits(ctx, p)
		if err != nil {
			return nil, false, err
		}
		return l.Data, l.HasMore, nil
	}, func(k BrandKit) string { return k.ID })
}

// CreateBrandKit saves a brand kit. The call is sent once, never retried:
// the server takes no Idempotency-Key here, and a retry after a lost answer
// would save a second kit.
func (c *Client) CreateBrandKit(ctx context.Context, req CreateBrandKitRequest) (*BrandKit, error) {
	var k BrandKit
	if err := c.sendOnce(ctx, "POST", "/v1/brand-kits", req, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// BrandKitFromURL drafts a kit from the site at siteURL (public https):
// name, colours, fonts, logo and identity as the page states them. The
// draft is not saved: save it, changed or not, with
// CreateBrandKit(ctx, draft.Request()). Nothing is recorded, so the call is
// retried like a read (a site that did not answer is a retryable 502).
func (c *Client) BrandKitFromURL(ctx context.Context, siteURL string) (*BrandKit, error) {
	var k BrandKit
	body := struct {
		URL string `json:"url"`
	}{siteURL}
	if err := c.do(ctx, "POST", "/v1/brand-kits/from-url", nil, body, "", &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// DeleteBrandKit deletes a kit. A kit a queued, processing or preview video
// uses is kept: 400 invalid_request with details.used_by; an unknown id, or
// another account's, is 404 not_found. The call is retried like a read:
// when an attempt whose answer was lost did delete the kit, the retry is
// answered 404, which DeleteBrandKit returns as deleted (the kit is gone as
// asked); a 404 to the first attempt is an error.
func (c *Client) DeleteBrandKit(ctx context.Context, id string) (*Deleted, error) {
	return deleteCall(ctx, c, "/v1/brand-kits/", "brand_kit", id)
}

// CreateUpload asks for a presigned address to PUT an image to (send the
// bytes with PutUploadBytes) and the signed address to use it at
// (PublicURL). Nothing is recorded, so the call is retried like a read.
func (c *Client) CreateUpload(ctx context.Context, req CreateUploadRequest) (*Upload, error) {
	var u Upload
	if err := c.do(ctx, "POST", "/v1/uploads", nil, req, "", &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// PutUploadBytes sends size bytes from body to up.UploadURL with its
// UploadHeaders (the declared Content-Type); -1 sends a body of unknown size
// chunked. The bytes must be of the declared type (400 invalid_request with
// details.declared and details.detected otherwise) and at most
// up.MaxSizeBytes. The API key is not sent: the URL's signature is the
// credential. The PUT is retried like any call when body is an io.Seeker
// (it is rewound to where it was), and sent once otherwise; body is never
// closed.
func (c *Client) PutUploadBytes(ctx context.Context, up *Upload, body io.Reader, size int64) (*UploadReceipt, error) {
	if up == nil {
		return nil, errors.New("vidfarm: PutUploadBytes: nil upload")
	}
	return c.putBytes(ctx, up.UploadURL, up.UploadHeaders, up.ContentType, body, size)
}

// ListAssetsParams pages GET /v1/assets. Zero values are left out.
type ListAssetsParams struct {
	Limit         int    // 1 to 100 (server default 20)
	StartingAfter string // an asset id: the page after it
}

// ListAssets reads one page of the account's assets, newest first.
func (c *Client) ListAssets(ctx context.Context, p ListAssetsParams) (*List[Asset], error) {
	var l List[Asset]
	if err := c.do(ctx, "GET", "/v1/assets", pageQuery(p.Limit, p.StartingAfter), nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Assets iterates over every asset after p.StartingAfter, page after page
// while has_more. An error ends the iteration after it is yielded.
func (c *Client) Assets(ctx context.Context, p ListAssetsParams) iter.Seq2[Asset, error] {
	return pages(p.StartingAfter, "list assets", func(after string) ([]Asset, bool, error) {
		p.StartingAfter = after
		l, err := c.ListAssets(ctx, p)
		if err != nil {
			return nil, false, err
		}
		return l.Data, l.HasMore, nil
	}, func(a Asset) string { return a.ID })
}

// GetAsset reads an asset.
func (c *Client) GetAsset(ctx context.Context, id string) (*Asset, error) {
	return get[Asset](ctx, c, "/v1/assets/", "asset", id)
}

// CreateAsset records a pending asset and returns where to PUT its bytes
// (PutAssetBytes), after which CompleteAsset makes it ready. An asset never
// completed is deleted 24 hours after its creation. The call is sent once,
// never retried: the server takes no Idempotency-Key here, and a retry
// after a lost answer would record a second asset.
func (c *Client) CreateAsset(ctx context.Context, req CreateAssetRequest) (*CreatedAsset, error) {
	var a CreatedAsset
	if err := c.sendOnce(ctx, "POST", "/v1/assets", req, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// PutAssetBytes sends an asset's bytes to its UploadURL with its
// UploadHeaders, as PutUploadBytes does; size must be the declared
// SizeBytes for CompleteAsset to accept them (more is refused at once, 413
// payload_too_large). A ready asset's bytes cannot be replaced.
func (c *Client) PutAssetBytes(ctx context.Context, as *CreatedAsset, body io.Reader, size int64) (*UploadReceipt, error) {
	if as == nil {
		return nil, errors.New("vidfarm: PutAssetBytes: nil asset")
	}
	return c.putBytes(ctx, as.UploadURL, as.UploadHeaders, as.ContentType, body, size)
}

// CompleteAsset checks the bytes PUT for an asset against its declared size
// and type and makes it ready, with a signed URL (400 invalid_request with
// the declared and found values otherwise: PUT again and retry).
// Completing a ready asset answers it unchanged, so the call is retried.
func (c *Client) CompleteAsset(ctx context.Context, id string) (*Asset, error) {
	if id == "" {
		return nil, errors.New("vidfarm: CompleteAsset: empty asset id")
	}
	var a Asset
	if err := c.do(ctx, "POST", "/v1/assets/"+url.PathEscape(id)+"/complete", nil, nil, "", &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// DeleteAsset deletes an asset and its bytes. An asset a brand kit has as
// its logo, or that an unfinished video or an avatar being made uses, is
// kept: 400 invalid_request with details.used_by; an unknown id, or another
// account's, is 404 not_found. The call is retried like DeleteBrandKit: a
// 404 to a retry is taken as deleted.
func (c *Client) DeleteAsset(ctx context.Context, id string) (*Deleted, error) {
	return deleteCall(ctx, c, "/v1/assets/", "asset", id)
}

// get reads the object at prefix+id.
func get[T any](ctx context.Context, c *Client, prefix, what, id string) (*T, error) {
	if id == "" {
		return nil, fmt.Errorf("vidfarm: empty %s id", what)
	}
	var v T
	if err := c.do(ctx, "GET", prefix+url.PathEscape(id), nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func pageQuery(limit int, after string) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after != "" {
		q.Set("starting_after", after)
	}
	return q
}

// putBytes PUTs body to a presigned upload address with its headers
// (contentType when they name none). The address is the server's own
// answer and carries its credential in the signature, so the API key is
// not sent and the call does not follow the cluster's leader. It is retried
// on the same failures as do when body can be rewound.
func (c *Client) putBytes(ctx context.Context, uploadURL string, headers map[string]string, contentType string, body io.Reader, size int64) (*UploadReceipt, error) {
	if body == nil {
		return nil, errors.New("vidfarm: upload: nil body")
	}
	u, err := url.Parse(uploadURL)
	if err != nil || uploadURL == "" {
		return nil, fmt.Errorf("vidfarm: upload: bad upload_url %q", uploadURL)
	}
	if !u.IsAbs() { // a server-relative address: under the base URL
		u = c.calls.At().ResolveReference(u)
	}
	seeker, _ := body.(io.Seeker)
	var start int64
	if seeker != nil {
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			seeker = nil
		}
	}
	if seeker == nil { // a stream cannot be sent again
		receipt, _, err := c.putAttempt(ctx, u.String(), headers, contentType, body, size)
		return receipt, err
	}
	var receipt *UploadReceipt
	err = c.retry(ctx, "upload", func() (time.Duration, error) {
		r, retryAfter, err := c.putAttempt(ctx, u.String(), headers, contentType, body, size)
		receipt = r
		return retryAfter, err
	}, func() error {
		if _, err := seeker.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("rewind the body for a retry: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return receipt, nil
}

func (c *Client) putAttempt(ctx context.Context, u string, headers map[string]string, contentType string, body io.Reader, size int64) (*UploadReceipt, time.Duration, error) {
	// NopCloser: the transport closes a request's body, and the caller's
	// (an *os.File) is the caller's to close.
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, io.NopCloser(body))
	if err != nil {
		return nil, 0, fmt.Errorf("vidfarm: upload: %w", err)
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, &netError{err: fmt.Errorf("vidfarm: PUT %s: %w", redact(u), err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, 0, &netError{err: fmt.Errorf("vidfarm: PUT %s: reading the answer: %w", redact(u), err)}
	}
	if resp.StatusCode >= 300 {
		e := parseError(resp.StatusCode, b, parseRetryAfter(resp.Header.Get("Retry-After")), resp.Header.Get("X-Request-Id"))
		return nil, e.RetryAfter, e
	}
	var r UploadReceipt
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, fmt.Errorf("vidfarm: PUT %s: decode the %d answer: %w", redact(u), resp.StatusCode, err)
	}
	return &r, 0, nil
}

// redact drops the query (the signature) of an upload address for errors.
func redact(u string) string {
	s, _, _ := strings.Cut(u, "?")
	return s
}
