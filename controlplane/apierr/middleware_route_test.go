package apierr

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

// A request is counted under the route chi matched, or "unmatched", and
// the status the client got: 200 for a handler that wrote nothing.
func TestRouteAndCode(t *testing.T) {
	type seen struct {
		route string
		code  int
	}
	var got seen
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &StatusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			got = seen{Route(r), sw.Code()}
		})
	})
	r.Get("/v1/things/{id}", func(w http.ResponseWriter, r *http.Request) {})
	r.Post("/v1/things", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	for _, tc := range []struct {
		method, path string
		want         seen
	}{
		{"GET", "/v1/things/42", seen{"/v1/things/{id}", http.StatusOK}},
		{"POST", "/v1/things", seen{"/v1/things", http.StatusCreated}},
		{"GET", "/nope", seen{"unmatched", http.StatusNotFound}},
	} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, nil))
		if got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.path, got, tc.want)
		}
	}
	if route := Route(httptest.NewRequest("GET", "/", nil)); route != "unmatched" {
		t.Errorf("a request chi never saw: %q", route)
	}
}
