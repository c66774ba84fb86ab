package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The HTTP side shared by the two OpenAI-compatible kinds (ChatPlanner,
// SpeechServer). The shapes follow the OpenAI API reference
// (https://platform.openai.com/docs/api-reference): bearer authentication,
// JSON bodies, and errors as {"error": {"message", "type", "param",
// "code"}}; rate limits answer 429, and a Retry-After header says how long
// to wait (https://platform.openai.com/docs/guides/error-codes).

// Bounds of the retries on 429 and 503 answers.
const (
	openAIMaxAttempts = 4                // tries of one request, the first included
	openAIMaxWait     = 30 * time.Second // the longest Retry-After honoured
	openAIBackoff     = time.Second      // first wait when the server gives no Retry-After
)

// APIError is a non-2xx answer of an OpenAI-compatible server. It unwraps to
// ErrRunnerFailed.
type APIError struct {
	Server  string // the request's URL, without credentials
	Status  int    // HTTP status
	Message string // error.message, or the start of the body
	Type    string // error.type, when given
	Param   string // error.param: the request field at fault, when given
	Code    string // error.code, when given
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s answered %d %s", e.Server, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	var tags []string
	if e.Type != "" {
		tags = append(tags, "type "+e.Type)
	}
	if e.Param != "" {
		tags = append(tags, "param "+e.Param)
	}
	if e.Code != "" {
		tags = append(tags, "code "+e.Code)
	}
	if len(tags) > 0 {
		b.WriteString(" (" + strings.Join(tags, ", ") + ")")
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrRunnerFailed) true.
func (e *APIError) Unwrap() error { return ErrRunnerFailed }

// openAIAPI is one server's connection settings, made from a ChatPlanner's
// or SpeechServer's fields for each call.
type openAIAPI struct {
	base    string // as configured, with or without /v1
	apiKey  string
	client  *http.Client
	timeout time.Duration // per attempt; 0 = none
	// wait sleeps between attempts; tests replace it to record the waits.
	wait func(context.Context, time.Duration) error
}

// newOpenAIAPI is the connection to base with a per-attempt timeout
// (0 = def).
func newOpenAIAPI(base, apiKey string, client *http.Client, timeout, def time.Duration, wait func(context.Context, time.Duration) error) openAIAPI {
	if timeout <= 0 {
		timeout = def
	}
	return openAIAPI{base: base, apiKey: apiKey, client: client, timeout: timeout, wait: wait}
}

// openAIAnswer is a 2xx answer, read whole.
type openAIAnswer struct {
	header http.Header
	body   []byte
}

// endpoint joins the base URL and an API path ("/chat/completions"). The
// base may name the server ("http://host:8000") or its API root
// ("http://host:8000/v1", as OpenAI clients take it); both work.
func (a openAIAPI) endpoint(path string) (string, error) {
	u, err := url.Parse(a.base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", invalidf("server URL %q: want an http(s) URL such as http://127.0.0.1:8000/v1", RedactURL(a.base))
	}
	root := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(root, "/v1") {
		root += "/v1"
	}
	u.Path = root + path
	return u.String(), nil
}

// call sends one request (a JSON body, or none when body is nil) and reads
// a 2xx answer of at most maxBytes. 429 and 503 answers are tried again,
// at most openAIMaxAttempts times in all, after the Retry-After the server
// asks for (at most openAIMaxWait), or after 1, 2, 4 s when it asks for
// none. Any other status is an *APIError.
func (a openAIAPI) call(ctx context.Context, method, path string, body any, maxBytes int64) (openAIAnswer, error) {
	target, err := a.endpoint(path)
	if err != nil {
		return openAIAnswer{}, err
	}
	var payload []byte
	if body != nil {
		if payload, err = json.Marshal(body); err != nil {
			return openAIAnswer{}, fmt.Errorf("encode request to %s: %w", RedactURL(target), err)
		}
	}
	backoff := openAIBackoff
	for attempt := 1; ; attempt++ {
		ans, retryAfter, err := a.once(ctx, method, target, payload, maxBytes)
		var apiErr *APIError
		if err == nil || !errors.As(err, &apiErr) || !retryable(apiErr) {
			return ans, err
		}
		if attempt == openAIMaxAttempts {
			return ans, fmt.Errorf("%w; gave up after %d attempts", err, attempt)
		}
		wait := backoff
		if retryAfter > 0 {
			wait = retryAfter
		}
		if wait > openAIMaxWait {
			return ans, fmt.Errorf("%w; it asks to retry after %s, longer than the %s vidfarm waits", err, wait, openAIMaxWait)
		}
		if err := a.sleep(ctx, wait); err != nil {
			return ans, err
		}
		backoff *= 2
	}
}

// retryable answers mean "busy, try again": rate limited, or overloaded
// (llama.cpp's server answers 503 while its model loads). OpenAI's 429
// with code insufficient_quota does not pass by waiting.
func retryable(e *APIError) bool {
	return e.Status == http.StatusTooManyRequests && e.Code != "insufficient_quota" ||
		e.Status == http.StatusServiceUnavailable
}

// once is one attempt; on a non-2xx answer it also returns the
// Retry-After the server asked for (0 when none).
func (a openAIAPI) once(ctx context.Context, method, target string, payload []byte, maxBytes int64) (openAIAnswer, time.Duration, error) {
	if a.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return openAIAnswer{}, 0, fmt.Errorf("%s: %w", RedactURL(target), err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.apiKey)
	}
	client := a.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return openAIAnswer{}, 0, fmt.Errorf("%s: %w", RedactURL(target), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return openAIAnswer{}, 0, fmt.Errorf("%s: read the answer: %w", RedactURL(target), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return openAIAnswer{}, retryAfter(resp.Header.Get("Retry-After"), time.Now()), apiError(RedactURL(target), resp.StatusCode, data)
	}
	if int64(len(data)) > maxBytes {
		return openAIAnswer{}, 0, fmt.Errorf("%s: %w: the answer is over %d bytes", RedactURL(target), ErrRunnerFailed, maxBytes)
	}
	return openAIAnswer{header: resp.Header, body: data}, 0, nil
}

func (a openAIAPI) sleep(ctx context.Context, d time.Duration) error {
	if a.wait != nil {
		return a.wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110, section 10.2.3). Unreadable or past values give 0.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// apiError reads an error answer: OpenAI's {"error": {...}}, the
// {"error": "text"} some servers send, FastAPI's {"detail": ...}
// (Kokoro-FastAPI), or else the start of the body as text.
func apiError(server string, status int, body []byte) *APIError {
	e := &APIError{Server: server, Status: status}
	var doc struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &doc) == nil {
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   *string         `json:"param"`
			Code    json.RawMessage `json:"code"` // a string, or a number (llama.cpp)
		}
		var text string
		switch {
		case json.Unmarshal(doc.Error, &obj) == nil && obj.Message != "":
			e.Message, e.Type = obj.Message, obj.Type
			if obj.Param != nil {
				e.Param = *obj.Param
			}
			e.Code = strings.Trim(string(obj.Code), `"`)
			if e.Code == "null" {
				e.Code = ""
			}
		case json.Unmarshal(doc.Error, &text) == nil && text != "":
			e.Message = text
		case json.Unmarshal(doc.Detail, &obj) == nil && obj.Message != "":
			e.Message, e.Type = obj.Message, obj.Type
		case len(doc.Detail) > 0:
			e.Message = string(doc.Detail)
		}
	}
	if e.Message == "" {
		e.Message = string(bytes.TrimSpace(body))
	}
	if len(e.Message) > 1024 {
		e.Message = strings.ToValidUTF8(e.Message[:1024], "") + "…"
	}
	return e
}

// modelsHealth checks a server through GET /v1/models (OpenAI's list
// models, which vLLM, llama.cpp's server, Ollama, LocalAI and
// Kokoro-FastAPI all serve): it must answer, and list model among its
// models. Ollama lists "name:latest" for a model asked for as "name".
func (a openAIAPI) modelsHealth(ctx context.Context, model string) error {
	ans, err := a.call(ctx, http.MethodGet, "/models", nil, 4<<20)
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ans.body, &list); err != nil {
		return fmt.Errorf("health check: %w: GET /v1/models is not a model list: %v", ErrRunnerFailed, err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID == model || m.ID == model+":latest" {
			return nil
		}
		ids = append(ids, m.ID)
	}
	target, _ := a.endpoint("/models")
	return fmt.Errorf("health check: %w: %s does not list model %q (it lists %s); set the runner's model to one of them",
		ErrRunnerFailed, RedactURL(target), model, strings.Join(ids, ", "))
}
