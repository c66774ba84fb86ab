package admin

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestAdminTokenOnlyAsBearer(t *testing.T) {
	h := Handler(Config{Token: "s3cret-admin", Gatherer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for name, c := range map[string]struct {
		header string
		want   int
	}{
		"bearer":             {"Bearer s3cret-admin", http.StatusOK},
		"scheme in any case": {"bEaReR s3cret-admin", http.StatusOK},
		"bare token":         {"s3cret-admin", http.StatusUnauthorized},
		"wrong token":        {"Bearer s3cret-admim", http.StatusUnauthorized},
		"other scheme":       {"Basic s3cret-admin", http.StatusUnauthorized},
		"scheme glued on":    {"Bearers3cret-admin", http.StatusUnauthorized},
		"scheme only":        {"Bearer", http.StatusUnauthorized},
		"none":               {"", http.StatusUnauthorized},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if c.header != "" {
				r.Header.Set("Authorization", c.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != c.want {
				t.Fatalf("Authorization %q: %d, want %d: %s", c.header, rec.Code, c.want, rec.Body)
			}
			if c.want != http.StatusUnauthorized {
				return
			}
			var env struct {
				Error struct {
					Code      string `json:"code"`
					RequestID string `json:"request_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code != "unauthorized" || env.Error.RequestID == "" {
				t.Fatalf("not the envelope (%v): %s", err, rec.Body)
			}
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// The profiles tell how the process spends CPU and memory, and name its
// code: they are behind the admin token like the rest.
func TestProfilesBehindTheToken(t *testing.T) {
	h := Handler(Config{Token: "s3cret-admin", Gatherer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, c := range []struct {
		path, header string
		want         int
		body         string
	}{
		{"/debug/pprof/heap?debug=1", "", http.StatusUnauthorized, `"unauthorized"`},
		{"/debug/pprof/heap?debug=1", "Bearer s3cret-admin", http.StatusOK, "heap profile:"},
		{"/debug/pprof/goroutine?debug=1", "Bearer s3cret-admin", http.StatusOK, "goroutine profile:"},
		{"/debug/pprof/", "Bearer s3cret-admin", http.StatusOK, "allocs"},
	} {
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != c.want || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("GET %s (%q): %d, want %d with %q: %.200s", c.path, c.header, rec.Code, c.want, c.body, rec.Body)
		}
	}
}

// A method a path does not take is a 405 with the Allow header RFC 9110
// requires (the admin listener had none), before authentication: the
// methods a path takes are no secret.
func TestAdminMethodNotAllowed(t *testing.T) {
	h := Handler(Config{Token: "s3cret-admin", Gatherer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/admin/v1/accounts", "POST"},
		{http.MethodPost, "/admin/v1/accounts/acct_x", "GET"},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		r.Header.Set("Authorization", "Bearer s3cret-admin")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &env)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != c.allow || env.Error.Code != "invalid_request" || env.Error.Details["allowed_methods"] == nil {
			t.Errorf("%s %s: %d, Allow %q, want 405 and %q: %s", c.method, c.path, rec.Code, rec.Header().Get("Allow"), c.allow, rec.Body)
		}
	}
}
