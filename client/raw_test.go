package client_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// newRawServer answers every request with status and body, as a proxy in front
// of the API might.
func newRawServer(t *testing.T, status int, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}
