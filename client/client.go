package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/internal/members"
)

// DefaultBaseURL is where `vidfarm dev` serves the API.
const DefaultBaseURL = "http://127.0.0.1:8080"

// maxBody bounds an answer read into memory: the largest documented answer (a
// page of 100 videos) is far below it.
const maxBody = 16 << 20

// Client calls the vidfarm public API. It is safe for concurrent use.
type Client struct {
	// calls is where calls go: base, the leader a member named, or the
	// member after one that gave no answer (WithMembers); streams is where
	// event streams go, which every member serves itself, so it does not
	// follow the leader.
	calls, streams *members.Cursor
	memberURLs     []string
	key            string
	http           *http.Client
	userAgent      string
	maxAttempts    int
	minBackoff     time.Duration
	maxBackoff     time.Duration
	pollInterval   time.Duration
	streamIdle     time.Duration
	waitRetry      func(err error, next time.Duration)
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client requests go through (default: a client
// with a 60 s timeout per attempt).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithMaxAttempts bounds how many times one call is sent (default 4; 1 turns
// retries off).
func WithMaxAttempts(n int) Option {
	return func(c *Client) { c.maxAttempts = max(n, 1) }
}

// WithBackoff sets the first retry's wait and the cap of the exponential
// backoff (default 500 ms and 30 s). A Retry-After longer than the backoff wins.
func WithBackoff(first, limit time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = first, max(first, limit) }
}

// WithPollInterval makes Wait poll at d instead of the video's
// poll_interval_seconds. Use it sparingly: polls count toward the rate limit.
func WithPollInterval(d time.Duration) Option { return func(c *Client) { c.pollInterval = d } }

// WithWaitRetry calls f each time Wait (or WaitPolling) could not read the
// video and will read it again after next: the server unreachable, busy
// (429) or failing (5xx) past the call's own retries. Wait rides such
// failures out until its context ends, so a restart or a leader election
// does not end a wait; f lets a caller say why nothing moves meanwhile.
func WithWaitRetry(f func(err error, next time.Duration)) Option {
	return func(c *Client) { c.waitRetry = f }
}

// WithMembers names the other members of a cluster whose one member is the
// base URL. A follower forwards every call to the leader and names it in
// the answer (X-Vidfarm-Leader); with the members known, the client sends
// its next calls straight to the leader, sparing the cluster the hop. When
// a member gives no answer at all (refused, reset, timed out), the client
// sends the call's retry, and the calls after it, to the next member in
// the order base URL, then these as given, wrapping around: a cluster that
// lost a member, its leader included, keeps serving a client that named
// the others. Event streams move the same way, on their own: any member
// serves them. The client follows only to the base URL or one of these,
// never to an address it was not given.
func WithMembers(urls ...string) Option {
	return func(c *Client) { c.memberURLs = append(c.memberURLs, urls...) }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the API at baseURL (the server's root, with or
// without /v1; empty means DefaultBaseURL) that authenticates with apiKey.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := parseBase(baseURL)
	if err != nil {
		return nil, fmt.Errorf("vidfarm: base URL %w", err)
	}
	if apiKey == "" {
		return nil, errors.New("vidfarm: no API key (create one with `vidfarm admin key create`, or use the one `vidfarm dev` prints)")
	}
	c := &Client{key: apiKey, http: &http.Client{Timeout: 60 * time.Second},
		userAgent: "vidfarm-go", maxAttempts: 4, minBackoff: 500 * time.Millisecond, maxBackoff: 30 * time.Second}
	for _, o := range opts {
		o(c)
	}
	others := make([]*url.URL, 0, len(c.memberURLs))
	for _, m := range c.memberURLs {
		mu, err := parseBase(m)
		if err != nil {
			return nil, fmt.Errorf("vidfarm: member URL %w", err)
		}
		others = append(others, mu)
	}
	c.memberURLs = nil // read into the set
	set := members.NewSet(u, others...)
	c.calls, c.streams = set.Cursor(), set.Cursor()
	return c, nil
}

// parseBase reads a server's root URL, with or without a trailing /v1.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: want http(s)://host[:port]", raw)
	}
	// vidfarm dev prints the API as <root>/v1: accept that too.
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	return u, nil
}

// CallOption changes one call.
type CallOption func(*call)

type call struct {
	idempotencyKey string
}

// WithIdempotencyKey sends key as the Idempotency-Key of a create instead of
// the one the client makes. Reuse a key to make a create safe to repeat across
// processes (a job queue's id, an order number).
func WithIdempotencyKey(key string) CallOption { return func(c *call) { c.idempotencyKey = key } }

// NewIdempotencyKey returns a random key, as the client makes for a create the
// caller gave none.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return "sdk_" + hex.EncodeToString(b)
}

// do sends one logical call, retrying it on network errors, 429, 5xx and
// answers marked retryable. Every attempt carries the same body and
// Idempotency-Key, so a retried create returns the first one's video. out, when
// not nil, receives the decoded 2xx answer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in any, idemKey string, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("vidfarm: encode %s %s: %w", method, path, err)
		}
	}
	return c.retry(ctx, method+" "+path, func() (time.Duration, error) {
		// Read for each attempt: after a failure the client may have moved
		// on to the next member.
		return c.attempt(ctx, method, c.calls.At(), path, query, body, idemKey, out)
	}, nil)
}

// retry runs try until it succeeds, fails in a way not worth retrying, or
// has run maxAttempts times, pausing between tries by the backoff (never
// sooner than the answer's Retry-After). rewind, when not nil, runs before
// each retry and ends the call when it fails (a body that cannot be sent
// again). An error after more than one try is an *afterAttempts.
func (c *Client) retry(ctx context.Context, what string, try func() (time.Duration, error), rewind func() error) error {
	for attempt := 1; ; attempt++ {
		retryAfter, err := try()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("vidfarm: %s: %w (last error: %w)", what, context.Cause(ctx), err)
		}
		if !retryable(err) || attempt >= c.maxAttempts {
			if attempt > 1 {
				return &afterAttempts{n: attempt, err: err}
			}
			return err
		}
		if serr := sleep(ctx, c.backoff(attempt, retryAfter)); serr != nil {
			return fmt.Errorf("vidfarm: %s: %w (last error: %w)", what, serr, err)
		}
		if rewind != nil {
			if rerr := rewind(); rerr != nil {
				return fmt.Errorf("vidfarm: %s: %w (last error: %w)", what, rerr, err)
			}
		}
	}
}

// afterAttempts is the last error of a call that was tried more than once:
// a 404 to a retry means something other than a 404 to the first try
// (deleteCall).
type afterAttempts struct {
	n   int
	err error
}

func (e *afterAttempts) Error() string { return fmt.Sprintf("after %d attempts: %v", e.n, e.err) }
func (e *afterAttempts) Unwrap() error { return e.err }

// sendOnce sends a call exactly once, with in as its JSON body (nil: none):
// for a write the server takes no Idempotency-Key for (a create, a secret
// rotation), where a retry after a lost answer would act twice.
func (c *Client) sendOnce(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("vidfarm: encode %s %s: %w", method, path, err)
		}
	}
	_, err := c.attempt(ctx, method, c.calls.At(), path, nil, body, "", out)
	return err
}

// deleteCall deletes the object at prefix+id, whose object type is object.
// A 404 to a retry means an earlier attempt whose answer was lost deleted
// it (or it was never there): either way it is gone, as asked.
func deleteCall(ctx context.Context, c *Client, prefix, object, id string) (*Deleted, error) {
	if id == "" {
		return nil, fmt.Errorf("vidfarm: empty %s id", object)
	}
	var d Deleted
	err := c.do(ctx, "DELETE", prefix+url.PathEscape(id), nil, nil, "", &d)
	if err != nil && ctx.Err() == nil && goneOnRetry(err) {
		return &Deleted{ID: id, Object: object, Deleted: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// goneOnRetry reports whether err is a 404 not_found answered to a retry,
// not to a call's first attempt.
func goneOnRetry(err error) bool {
	var retried *afterAttempts
	var e *Error
	return errors.As(err, &retried) && errors.As(err, &e) && e.Status == http.StatusNotFound && e.Code == CodeNotFound
}

// attempt sends the request once, to path with query under at (the base
// URL, a member, or the leader the client followed). It returns the
// server's Retry-After with an error answer.
func (c *Client) attempt(ctx context.Context, method string, at *url.URL, path string, query url.Values, body []byte, idemKey string, out any) (time.Duration, error) {
	full := *at
	full.Path += path
	full.RawQuery = query.Encode()
	u := full.String()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("vidfarm: %s %s: %w", method, u, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.calls.Failover(ctx, at)
		return 0, &netError{err: fmt.Errorf("vidfarm: %s %s: %w", method, u, err)}
	}
	defer resp.Body.Close()
	c.calls.Answered(ctx, at, resp.Header)
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		c.calls.Failover(ctx, at) // it went away mid-answer
		return 0, &netError{err: fmt.Errorf("vidfarm: %s %s: reading the answer: %w", method, u, err)}
	}
	ra := parseRetryAfter(resp.Header.Get("Retry-After"))
	if resp.StatusCode >= 300 {
		e := parseError(resp.StatusCode, b, ra, resp.Header.Get("X-Request-Id"))
		return e.RetryAfter, e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return 0, fmt.Errorf("vidfarm: %s %s: decode the %d answer: %w", method, u, resp.StatusCode, err)
		}
		if h, ok := out.(headerReader); ok {
			h.answered(resp.Header)
		}
	}
	return 0, nil
}

// headerReader is an answer's type that keeps something of its headers.
type headerReader interface{ answered(http.Header) }

// netError marks a failure to get an answer at all: always worth another try,
// since creates carry an Idempotency-Key and the other calls are reads or
// idempotent (cancel).
type netError struct{ err error }

func (n *netError) Error() string { return n.err.Error() }
func (n *netError) Unwrap() error { return n.err }

func retryable(err error) bool {
	var ne *netError
	if errors.As(err, &ne) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && (e.Retryable || e.Status == http.StatusTooManyRequests || e.Status >= 500)
}

// backoff is exponential with jitter in [d/2, d], so clients that failed
// together do not retry together; the server's Retry-After is a floor.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := c.minBackoff << min(attempt-1, 20)
	if d <= 0 || d > c.maxBackoff {
		d = c.maxBackoff
	}
	if half := int64(d / 2); half > 0 {
		d = time.Duration(half + mrand.Int64N(half+1))
	}
	return max(d, retryAfter)
}

// parseRetryAfter reads delay-seconds or an HTTP date (RFC 9110 §10.2.3).
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
