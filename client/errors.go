package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Error is an error answer of the API: the `error` object of the ErrorResponse
// schema plus the HTTP status and the Retry-After header. Match it with
// errors.As, or test its code with IsCode.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error code (invalid_request, insufficient_credits, …).
	Code string
	// Message is for people; it may be reworded. Branch on Code.
	Message string
	// Details holds the code's details (field, required_credits, existing_video_id, …).
	Details map[string]any
	// Links holds buy_credits and upgrade addresses where the code has them.
	Links map[string]string
	// Retryable is the server's word that the same request may be sent again.
	Retryable bool
	// RetryAfter is the wait the server asked for (Retry-After, or
	// retry_after_seconds); 0 when it named none.
	RetryAfter time.Duration
	// RequestID identifies the request for support.
	RequestID string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("vidfarm: %d %s: %s", e.Status, e.Code, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// IsCode reports whether err is (or wraps) an API error with this code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// wireError is the ErrorResponse schema's `error` object.
type wireError struct {
	Code              string            `json:"code"`
	Message           string            `json:"message"`
	Retryable         bool              `json:"retryable"`
	RequestID         string            `json:"request_id"`
	Details           map[string]any    `json:"details,omitempty"`
	RetryAfterSeconds int               `json:"retry_after_seconds,omitempty"`
	Links             map[string]string `json:"links,omitempty"`
}

// parseError turns an error answer into *Error. A body that is not the
// documented envelope (a proxy's HTML page) still gives an Error, with code
// http_<status> and the start of the body as its message.
func parseError(status int, body []byte, retryAfter time.Duration, requestID string) *Error {
	var env struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code == "" {
		msg := string(body)
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &Error{Status: status, Code: fmt.Sprintf("http_%d", status), Message: msg,
			Retryable: status == 429 || status >= 500, RetryAfter: retryAfter, RequestID: requestID}
	}
	w := env.Error
	e := &Error{Status: status, Code: w.Code, Message: w.Message, Details: w.Details, Links: w.Links,
		Retryable: w.Retryable, RetryAfter: retryAfter, RequestID: w.RequestID}
	if e.RetryAfter == 0 && w.RetryAfterSeconds > 0 {
		e.RetryAfter = time.Duration(w.RetryAfterSeconds) * time.Second
	}
	if e.RequestID == "" {
		e.RequestID = requestID
	}
	return e
}
