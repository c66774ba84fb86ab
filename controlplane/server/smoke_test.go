package server_test

import (
	"net/http"
	"testing"
)

func TestCreateAndGetVideo(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	r := h.do("POST", "/v1/videos", key, map[string]any{"mode": "auto", "prompt": "a lantern", "duration_seconds": 11})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	v := r.json(t)
	if v["status"] != "queued" || v["credits_charged"].(float64) != 9 {
		t.Fatalf("want queued video charged 9 credits, got %s", r.Body)
	}
	g := h.do("GET", "/v1/videos/"+v["id"].(string), key, nil)
	if g.Status != http.StatusOK || g.json(t)["id"] != v["id"] {
		t.Fatalf("get: %d %s", g.Status, g.Body)
	}
	me := h.do("GET", "/v1/me", key, nil).json(t)
	if me["credits"].(float64) != 91 {
		t.Fatalf("balance after 9-credit video: %v", me["credits"])
	}
}
