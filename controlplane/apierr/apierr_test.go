package apierr

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var env struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error == nil {
		t.Fatalf("not an envelope (%v): %s", err, rec.Body)
	}
	return env.Error
}

func TestWriteEnvelope(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r = r.WithContext(WithRequestID(r.Context(), "req_abc"))
	rec := httptest.NewRecorder()
	e := New(http.StatusTooManyRequests, CodeRateLimited, "slow down").With("limit", "6 per minute").Link("upgrade", "https://x")
	e.RetryAfter = 7
	Write(rec, r, e)
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "7" || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
	got := decode(t, rec)
	if got["code"] != CodeRateLimited || got["request_id"] != "req_abc" || got["retryable"] != true ||
		got["retry_after_seconds"] != float64(7) || got["details"].(map[string]any)["limit"] != "6 per minute" ||
		got["links"].(map[string]any)["upgrade"] != "https://x" {
		t.Fatalf("envelope %v", got)
	}
	if e.RequestID != "" {
		t.Fatal("Write changed the shared error value")
	}
}

// TestLinksAlwaysWritten: the contract does not mark error.links optional, so
// an error without links says so with an empty object, not by leaving it out.
func TestLinksAlwaysWritten(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, httptest.NewRequest("GET", "/", nil), NotFound("video"))
	links, ok := decode(t, rec)["links"].(map[string]any)
	if !ok || len(links) != 0 {
		t.Fatalf("links = %#v, want {}: %s", decode(t, rec)["links"], rec.Body)
	}
}

func TestRetryableByStatus(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 404: false, 409: false, 429: true, 500: true, 503: true} {
		if got := New(status, "x", "y").Retryable; got != want {
			t.Errorf("status %d: retryable %v, want %v", status, got, want)
		}
	}
}

func TestRecovererAnswersWithTheEnvelope(t *testing.T) {
	h := Recoverer(slog.New(slog.NewTextHandler(io.Discard, nil)), "test")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))
	rec := httptest.NewRecorder()
	sw := &StatusWriter{ResponseWriter: rec}
	h.ServeHTTP(sw, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || sw.Status != 500 || decode(t, rec)["code"] != CodeInternalError {
		t.Fatalf("after a panic: %d %s", rec.Code, rec.Body)
	}
}
