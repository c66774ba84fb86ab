// Package apierr is the contract's error envelope as a Go value: every error the
// public, admin and agent APIs return is an *Error with a stable code, written by
// Write with the request id of the request that failed.
package apierr

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
)

// Error is one API error. Code is stable; Message may be reworded.
type Error struct {
	Status     int            `json:"-"`
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	Retryable  bool           `json:"retryable"`
	RequestID  string         `json:"request_id"`
	Details    map[string]any `json:"details,omitempty"`
	RetryAfter int            `json:"retry_after_seconds,omitempty"`
	// Links is always written, {} when the error has none: the contract
	// marks details and retry_after_seconds optional, not links, so a
	// client may read it on every error.
	Links map[string]string `json:"links"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Codes of the contract.
const (
	CodeInvalidRequest      = "invalid_request"
	CodeUnknownModel        = "unknown_model"
	CodeMissingAPIKey       = "missing_api_key"
	CodeInvalidAPIKey       = "invalid_api_key"
	CodeAPIKeyRevoked       = "api_key_revoked"
	CodeInsufficientCredits = "insufficient_credits"
	CodeUpgradeRequired     = "upgrade_required"
	CodeFreeLimitReached    = "free_limit_reached"
	CodeNotFound            = "not_found"
	CodeDuplicateRequest    = "duplicate_request"
	CodeIdempotencyInFlight = "idempotency_in_flight"
	CodePayloadTooLarge     = "payload_too_large"
	CodeRateLimited         = "rate_limited"
	CodeUpstreamError       = "upstream_error"
	CodeInternalError       = "internal_error"
	CodeInvalidURL          = "invalid_url"
	CodeAccountNotFound     = "account_not_found"
	CodeWebhookLimitReached = "webhook_limit_reached"
	CodeUnauthorized        = "unauthorized" // admin and agent listeners only
	// CodeVideoNotCancelable is an addition: a cancel of a finished video.
	CodeVideoNotCancelable = "video_not_cancelable"
	// CodeWebhookDisabled is an addition: a test event or a retry to a
	// disabled webhook endpoint.
	CodeWebhookDisabled = "webhook_disabled"
	// CodeNodeNameInUse (agent listener only, 409) refuses a registration
	// under the name of a live node that is not the registering agent's.
	CodeNodeNameInUse = "node_name_in_use"
	// CodeNodeNotDown (admin listener only, 409) refuses removing a render
	// node whose agent still heartbeats, unless forced.
	CodeNodeNotDown          = "node_not_down"
	defaultInternalErrorText = "internal error; retry with exponential backoff"
)

// CodeRequestTimeout (408, retryable) answers a request whose body did not
// arrive before its read deadline (httpguard); nothing of it was acted on.
const CodeRequestTimeout = "request_timeout"

// New builds an error.
func New(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message, Retryable: status >= 500 || status == http.StatusTooManyRequests}
}

// With adds a detail and returns the error.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// Link adds a link and returns the error.
func (e *Error) Link(name, url string) *Error {
	if e.Links == nil {
		e.Links = map[string]string{}
	}
	e.Links[name] = url
	return e
}

// Invalid is a 400 invalid_request about one field.
func Invalid(field, message string) *Error {
	return New(http.StatusBadRequest, CodeInvalidRequest, message).With("field", field)
}

// NotFound is a 404 not_found.
func NotFound(what string) *Error {
	return New(http.StatusNotFound, CodeNotFound, what+" not found")
}

// Internal is a 500 internal_error that tells nothing about the cause; log it.
func Internal() *Error {
	return New(http.StatusInternalServerError, CodeInternalError, defaultInternalErrorText)
}

type ctxKey struct{}

// WithRequestID stores the request id in the context.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request id stored in the context.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Write sends the envelope {"error": e} with the request's id.
func Write(w http.ResponseWriter, r *http.Request, e *Error) {
	out := *e
	out.RequestID = RequestID(r.Context())
	if out.Links == nil {
		out.Links = map[string]string{}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if out.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(out.RetryAfter))
	}
	w.WriteHeader(out.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *Error `json:"error"`
	}{&out})
}

// WriteJSON sends a success body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
