package apierr

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/ids"
)

// Recoverer turns a panic in a handler into a logged 500 with the envelope, so one
// bad request never takes a listener down. what names the listener in the log.
func Recoverer(log *slog.Logger, what string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic serving "+what+" request", "request_id", RequestID(r.Context()),
						"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					Write(w, r, Internal())
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// StatusWriter remembers the status a handler answered with, for logs and metrics.
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

// WriteHeader records the first status written.
func (s *StatusWriter) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (s *StatusWriter) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Code is the status the client got: the first one written, or 200 when
// the handler wrote nothing (net/http then answers 200).
func (s *StatusWriter) Code() int {
	if s.Status == 0 {
		return http.StatusOK
	}
	return s.Status
}

// Route is the pattern of the route chi matched for r, the label a
// listener counts and logs its requests under; "unmatched" when none did,
// so an unknown path adds no series of its own.
func Route(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if route := rc.RoutePattern(); route != "" {
			return route
		}
	}
	return "unmatched"
}

// RequestIDs gives every request a new req_ id: in its context, for errors and
// logs, and in the X-Request-Id header, for the client.
func RequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := ids.New("req")
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(WithRequestID(r.Context(), id)))
	})
}
