package server_test

import (
	"bytes"
	"net/http"
	"testing"
)

// TestIdempotencyComparesMeaning: a retry that spells the same request differently
// (null for absent, 5.0 for 5, an explicit default) replays; one that asks for
// something else is a duplicate_request.
func TestIdempotencyComparesMeaning(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 1000)
	first := h.do("POST", "/v1/videos", key, `{"mode":"auto","prompt":"a lantern","duration_seconds":5}`, "Idempotency-Key", "k1")
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	for _, body := range []string{
		`{"prompt":"a lantern","mode":"auto","duration_seconds":5.0}`,
		`{"mode":"auto","prompt":"a lantern","duration_seconds":5,"name":null}`,
		`{"mode":"auto","prompt":"a lantern","duration_seconds":5,"orientation":"landscape"}`,
	} {
		r := h.do("POST", "/v1/videos", key, body, "Idempotency-Key", "k1")
		if r.Status != http.StatusCreated || !bytes.Equal(r.Body, first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry %s: %d %s, want the original 201 replayed", body, r.Status, r.Body)
		}
	}
	r := h.do("POST", "/v1/videos", key, `{"mode":"auto","prompt":"a lantern","duration_seconds":6}`, "Idempotency-Key", "k1")
	if r.Status != http.StatusConflict || r.errorCode(t) != "duplicate_request" {
		t.Fatalf("other request under the same key: %d %s", r.Status, r.Body)
	}
}
