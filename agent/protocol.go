package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vidfarm/vidfarm/internal/members"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// The client side of the agent protocol (scheduler/wire). Every call takes a
// context that bounds it; none retries: the daemon decides what to retry.

var (
	// errUnauthorized is a 401: the credential (or, on register, the agent
	// token) is unknown to the control plane.
	errUnauthorized = errors.New("control plane does not know this credential (401)")
	// errStaleLease is a 409 stale_lease on a task report: the node no
	// longer holds that lease; drop the task, never retry.
	errStaleLease = errors.New("lease is stale")
)

// apiError is a refusal from the control plane, decoded from its error
// envelope {"error": {"code", "message", ...}}. errors.Is matches it against
// errUnauthorized (401) and, for task reports, errStaleLease.
type apiError struct {
	Status  int
	Code    string // "" when the answer was not in the error envelope (not from a vidfarm listener)
	Message string
	At      string // the member that answered, its password left out
	task    bool   // a report about a task: any 409 means the lease is gone
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" {
		return fmt.Sprintf("control plane answered %d %s: %s", e.Status, e.Code, msg)
	}
	return fmt.Sprintf("control plane answered %d: %s", e.Status, msg)
}

func (e *apiError) Is(target error) bool {
	switch target {
	case errUnauthorized:
		return e.Status == http.StatusUnauthorized
	case errStaleLease:
		return e.Code == wire.CodeStaleLease || (e.task && e.Status == http.StatusConflict)
	}
	return false
}

// transient reports whether a failed call may succeed if repeated: network
// errors, timeouts of one call, 408, 429 and 5xx.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusRequestTimeout
	}
	return true
}

// cpClient speaks the agent protocol to one control plane, through the
// member at its cursor: Config.Server, the leader a follower named, or the
// member after one that gave no answer (Config.Members).
type cpClient struct {
	at *members.Cursor
	hc *http.Client
}

// newCPClient is the client of cfg's control plane, checked by
// withDefaults: every URL parses.
func newCPClient(cfg Config) (*cpClient, error) {
	base, err := url.Parse(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("%w: --server: %w", ErrConfig, err)
	}
	others := make([]*url.URL, 0, len(cfg.Members))
	for _, m := range cfg.Members {
		u, err := url.Parse(m)
		if err != nil {
			return nil, fmt.Errorf("%w: --server: %w", ErrConfig, err)
		}
		others = append(others, u)
	}
	return &cpClient{at: members.NewSet(base, others...).Cursor(), hc: cfg.HTTPClient}, nil
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// do sends one request. A 2xx answer is returned with its body open; any
// other status is turned into an *apiError and the body closed.
func (c *cpClient) do(ctx context.Context, method, path, bearer string, body io.Reader, size int64, contentType string, task bool) (*http.Response, error) {
	return c.doWith(ctx, method, path, bearer, nil, body, size, contentType, task)
}

// doWith is do with more request headers.
func (c *cpClient) doWith(ctx context.Context, method, path, bearer string, h http.Header, body io.Reader, size int64, contentType string, task bool) (*http.Response, error) {
	at := c.at.At()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(at.String(), "/")+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		c.at.Failover(ctx, at) // its retry goes to the next member
		return nil, fmt.Errorf("%s %s at %s: %w", method, path, at.Host, err)
	}
	c.at.Answered(ctx, at, resp.Header)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ae := &apiError{Status: resp.StatusCode, At: at.Redacted(), task: task}
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error.Code != "" {
		ae.Code, ae.Message = env.Error.Code, env.Error.Message
	} else {
		ae.Message = strings.TrimSpace(string(data))
		if len(ae.Message) > 200 {
			ae.Message = ae.Message[:200] + "…"
		}
	}
	return nil, fmt.Errorf("%s %s: %w", method, path, ae)
}

// postJSON posts in as JSON and decodes a 2xx answer into out (if not nil).
// It returns the status of a 2xx answer.
func (c *cpClient) postJSON(ctx context.Context, path, bearer string, in, out any, task bool) (int, error) {
	return c.postJSONWith(ctx, path, bearer, nil, in, out, task)
}

// postJSONWith is postJSON with more request headers.
func (c *cpClient) postJSONWith(ctx context.Context, path, bearer string, h http.Header, in, out any, task bool) (int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, fmt.Errorf("POST %s: encode: %w", path, err)
	}
	resp, err := c.doWith(ctx, http.MethodPost, path, bearer, h, bytes.NewReader(body), int64(len(body)), "application/json", task)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("POST %s: decode answer: %w", path, err)
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return resp.StatusCode, nil
}

// register registers the node; prev, when not empty, is the credential
// the agent held before (wire.HeaderPreviousCredential).
func (c *cpClient) register(ctx context.Context, token, prev string, req wire.RegisterRequest) (wire.RegisterResponse, error) {
	var out wire.RegisterResponse
	var h http.Header
	if prev != "" {
		h = http.Header{wire.HeaderPreviousCredential: {prev}}
	}
	if _, err := c.postJSONWith(ctx, "/agent/v1/register", token, h, req, &out, false); err != nil {
		return out, err
	}
	if out.Credential == "" {
		return out, errors.New("POST /agent/v1/register: answer has no credential")
	}
	return out, nil
}

func (c *cpClient) heartbeat(ctx context.Context, cred string, req wire.HeartbeatRequest) (wire.HeartbeatResponse, error) {
	var out wire.HeartbeatResponse
	_, err := c.postJSON(ctx, "/agent/v1/heartbeat", cred, req, &out, false)
	return out, err
}

// lease asks for one task, waiting up to waitSeconds on the server; nil
// means there is nothing to do (204).
func (c *cpClient) lease(ctx context.Context, cred string, waitSeconds int) (*wire.Assignment, error) {
	var out wire.Assignment
	status, err := c.postJSON(ctx, "/agent/v1/lease?wait="+strconv.Itoa(waitSeconds), cred, wire.LeaseRequest{}, &out, false)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	if out.TaskID == "" {
		return nil, errors.New("POST /agent/v1/lease: assignment has no task_id")
	}
	return &out, nil
}

func taskPath(taskID, what string) string {
	return "/agent/v1/tasks/" + url.PathEscape(taskID) + "/" + what
}

func (c *cpClient) progress(ctx context.Context, cred, taskID string, req wire.ProgressRequest) error {
	_, err := c.postJSON(ctx, taskPath(taskID, "progress"), cred, req, nil, true)
	return err
}

func (c *cpClient) complete(ctx context.Context, cred, taskID string, req wire.CompleteRequest) error {
	_, err := c.postJSON(ctx, taskPath(taskID, "complete"), cred, req, nil, true)
	return err
}

func (c *cpClient) fail(ctx context.Context, cred, taskID string, req wire.FailRequest) error {
	_, err := c.postJSON(ctx, taskPath(taskID, "fail"), cred, req, nil, true)
	return err
}

func (c *cpClient) deregister(ctx context.Context, cred string) error {
	_, err := c.postJSON(ctx, "/agent/v1/deregister", cred, struct{}{}, nil, false)
	return err
}

// put sends v as JSON to a PUT route of the agent API (the in-place
// capacity updates, PUT /agent/v1/models and /agent/v1/capacity).
func (c *cpClient) put(ctx context.Context, path, cred string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("PUT %s: encode: %w", path, err)
	}
	resp, err := c.do(ctx, http.MethodPut, path, cred, bytes.NewReader(body), int64(len(body)), "application/json", false)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return resp.Body.Close()
}

// blobPath is the URL path of a blob key, each segment escaped.
func blobPath(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/agent/v1/blobs/" + strings.Join(segs, "/")
}

// putBlob uploads the file at path as blob key, under the lease with token.
func (c *cpClient) putBlob(ctx context.Context, cred, key, path string, token uint64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	resp, err := c.do(ctx, http.MethodPut, blobPath(key)+"?lease_token="+strconv.FormatUint(token, 10), cred, f, st.Size(), contentType(path), false)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return resp.Body.Close()
}

// getBlob downloads blob key into a new file at path.
func (c *cpClient) getBlob(ctx context.Context, cred, key, path string) error {
	resp, err := c.do(ctx, http.MethodGet, blobPath(key), cred, nil, 0, "", false)
	if err != nil {
		return fmt.Errorf("download %s: %w", key, err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("download %s: %w", key, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("download %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("download %s: %w", key, err)
	}
	return nil
}

// contentType is the media type an artifact is uploaded with.
func contentType(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".mp4":
		return "video/mp4"
	case ".wav":
		return "audio/wav"
	case ".json":
		return "application/json"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".png":
		return "image/png"
	case ".srt":
		return "application/x-subrip"
	case ".vtt":
		return "text/vtt"
	}
	return "application/octet-stream"
}
