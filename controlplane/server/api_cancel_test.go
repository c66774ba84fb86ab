package server_test

import (
	"net/http"
	"testing"
)

// TestAPICancelVideo cancels a queued video over HTTP: full refund, the
// canceled status with its cancellation object, an idempotent second cancel,
// the status filter; and the refusals (a preview, another account's video).
func TestAPICancelVideo(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 500)
	_, otherKey := h.account("pro", 500)
	v := h.create(key, autoReq("duration_seconds", 30))
	id := v["id"].(string)
	charged := jsonInt(t, v["credits_charged"])
	if charged <= 0 || h.balance(key) != 500-charged {
		t.Fatalf("created %v, balance %d", v, h.balance(key))
	}
	// No node can run it: a read says so with a null estimate (the create's
	// answer has none).
	if _, has := v["progress"].(map[string]any)["eta_seconds"]; has {
		t.Fatalf("the create answer carries an estimate: %v", v["progress"])
	}
	queued := expectAPIStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), http.StatusOK)
	if eta, has := queued["progress"].(map[string]any)["eta_seconds"]; !has || eta != nil {
		t.Fatalf("a queued video no node can run: progress %v, want eta_seconds null", queued["progress"])
	}
	expectAPIError(t, h.do("POST", "/v1/videos/"+id+"/cancel", otherKey, nil), http.StatusNotFound, "not_found")
	expectAPIError(t, h.do("POST", "/v1/videos/"+id+"/cancel", key, map[string]any{"reason": "x"}), http.StatusBadRequest, "invalid_request")

	c := expectAPIStatus(t, h.do("POST", "/v1/videos/"+id+"/cancel", key, nil), http.StatusOK)
	cancellation, ok := c["cancellation"].(map[string]any)
	if c["status"] != "canceled" || !ok || jsonInt(t, cancellation["credits_refunded"]) != charged || jsonInt(t, cancellation["canceled_at"]) <= 0 {
		t.Fatalf("canceled video %v", c)
	}
	if _, has := c["progress"]; has {
		t.Fatalf("a canceled video shows progress: %v", c)
	}
	if got := h.balance(key); got != 500 {
		t.Fatalf("balance %d after canceling a queued video, want 500", got)
	}
	again := expectAPIStatus(t, h.do("POST", "/v1/videos/"+id+"/cancel", key, map[string]any{}), http.StatusOK)
	if !jsonEqual(t, again, c) || h.balance(key) != 500 {
		t.Fatalf("second cancel answered %v (first %v), balance %d", again, c, h.balance(key))
	}
	g := expectAPIStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), http.StatusOK)
	if !jsonEqual(t, g, c) {
		t.Fatalf("GET %v, cancel answered %v", g, c)
	}
	list := expectAPIStatus(t, h.do("GET", "/v1/videos?status=canceled", key, nil), http.StatusOK)
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != id {
		t.Fatalf("status=canceled lists %v", list["data"])
	}

	_, freeKey := h.account("free", 0)
	p := h.create(freeKey, autoReq("duration_seconds", 30))
	e := expectAPIError(t, h.do("POST", "/v1/videos/"+p["id"].(string)+"/cancel", freeKey, nil), http.StatusConflict, "video_not_cancelable")
	if errDetails(t, e)["status"] != "preview" {
		t.Fatalf("details %v, want status preview", errDetails(t, e))
	}
}
