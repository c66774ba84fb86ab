package apierr

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// MethodNotAllowed answers a request whose path routes has, under another
// method, with 405, the Allow header RFC 9110 (section 15.5.6) requires,
// and the methods in details.allowed_methods, so a client learns what the
// path takes. withHead lists HEAD beside GET, for a listener that serves
// HEAD on every GET route.
func MethodNotAllowed(routes chi.Routes, withHead bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if routes.Match(chi.NewRouteContext(), m, r.URL.Path) {
				allowed = append(allowed, m)
				if m == http.MethodGet && withHead {
					allowed = append(allowed, http.MethodHead)
				}
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		Write(w, r, New(http.StatusMethodNotAllowed, CodeInvalidRequest,
			fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))).
			With("allowed_methods", allowed))
	}
}

// MethodLabel is r's method as a metric label: the methods HTTP defines for
// the listeners' routes, and "other" for any other token. A client may send
// any token as a method (RFC 9110, section 9.1), even unauthenticated, and
// each distinct label value is a new series Prometheus keeps: without the
// fold, one curl loop could grow a member's /metrics without bound.
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}
