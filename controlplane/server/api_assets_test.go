package server_test

import (
	"bytes"
	"fmt"
	"image/color"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/server"
)

// readyAsset creates an asset for img, uploads it and completes it; it
// returns the completed asset.
func (h *harness) readyAsset(key string, img []byte) map[string]any {
	h.t.Helper()
	as := expectAPIStatus(h.t, h.do("POST", "/v1/assets", key, fmt.Sprintf(`{"filename":"logo.png","content_type":"image/png","size_bytes":%d}`, len(img))), http.StatusCreated)
	hdr := as["upload_headers"].(map[string]any)
	expectAPIStatus(h.t, h.put(as["upload_url"].(string), hdr["Content-Type"].(string), img, false), http.StatusOK)
	return expectAPIStatus(h.t, h.do("POST", "/v1/assets/"+as["id"].(string)+"/complete", key, nil), http.StatusOK)
}

func TestAssetLifecycle(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	_, otherKey := h.account("pro", 100)
	img := pngBytes(t, 40, 40, color.RGBA{10, 200, 90, 255})

	as := expectAPIStatus(t, h.do("POST", "/v1/assets", key, fmt.Sprintf(`{"filename":"logo.png","content_type":"image/png","size_bytes":%d}`, len(img))), http.StatusCreated)
	id, _ := as["id"].(string)
	if len(id) < 4 || id[:3] != "as_" || as["asset_id"] != id || as["status"] != "pending" || as["url"] != nil {
		t.Fatalf("created asset %v", as)
	}
	uploadURL := as["upload_url"].(string)

	// Completing before the bytes are there says what to do.
	e := expectAPIError(t, h.do("POST", "/v1/assets/"+id+"/complete", key, nil), http.StatusBadRequest, "invalid_request")
	if errDetails(t, e)["asset_id"] != id {
		t.Fatalf("details %v", e)
	}
	// More bytes than declared are refused at the PUT.
	expectAPIError(t, h.put(uploadURL, "image/png", append(bytes.Clone(img), 0), false), http.StatusRequestEntityTooLarge, "payload_too_large")
	// Fewer bytes are stored, but completion refuses them with both sizes.
	expectAPIStatus(t, h.put(uploadURL, "image/png", img[:len(img)-1], false), http.StatusOK)
	e = expectAPIError(t, h.do("POST", "/v1/assets/"+id+"/complete", key, nil), http.StatusBadRequest, "invalid_request")
	if d := errDetails(t, e); jsonInt(t, d["declared_size_bytes"]) != int64(len(img)) || jsonInt(t, d["stored_size_bytes"]) != int64(len(img)-1) {
		t.Fatalf("details %v", d)
	}
	// A pending asset is not usable in a video.
	e = expectAPIError(t, h.do("POST", "/v1/videos", key, `{"mode":"auto","prompt":"p","file_asset_ids":["`+id+`"]}`), http.StatusBadRequest, "invalid_request")
	if errDetails(t, e)["asset_id"] != id {
		t.Fatalf("details %v", e)
	}

	expectAPIStatus(t, h.put(uploadURL, "image/png", img, false), http.StatusOK)
	// Another account sees nothing of it.
	for _, r := range []response{
		h.do("GET", "/v1/assets/"+id, otherKey, nil),
		h.do("POST", "/v1/assets/"+id+"/complete", otherKey, nil),
		h.do("DELETE", "/v1/assets/"+id, otherKey, nil),
	} {
		expectAPIError(t, r, http.StatusNotFound, "not_found")
	}
	done := expectAPIStatus(t, h.do("POST", "/v1/assets/"+id+"/complete", key, `{}`), http.StatusOK)
	if done["status"] != "ready" || done["completed_at"] == nil {
		t.Fatalf("completed asset %v", done)
	}
	if got := h.get(done["url"].(string)); got.Status != http.StatusOK || !bytes.Equal(got.Body, img) {
		t.Fatalf("asset url answered %d with %d bytes", got.Status, len(got.Body))
	}
	// Complete is idempotent; the bytes of a ready asset cannot change.
	expectAPIStatus(t, h.do("POST", "/v1/assets/"+id+"/complete", key, nil), http.StatusOK)
	expectAPIError(t, h.put(uploadURL, "image/png", img, false), http.StatusBadRequest, "invalid_request")

	list := expectAPIStatus(t, h.do("GET", "/v1/assets?limit=5", key, nil), http.StatusOK)
	if list["object"] != "list" || jsonInt(t, list["total"]) != 1 || list["data"].([]any)[0].(map[string]any)["id"] != id {
		t.Fatalf("list %v", list)
	}
	if other := expectAPIStatus(t, h.do("GET", "/v1/assets", otherKey, nil), http.StatusOK); jsonInt(t, other["total"]) != 0 {
		t.Fatalf("another account lists %v", other)
	}

	// A queued video that uses it keeps it.
	v := h.create(key, `{"mode":"auto","prompt":"a boat on a lake","file_asset_ids":["`+id+`"]}`)
	e = expectAPIError(t, h.do("DELETE", "/v1/assets/"+id, key, nil), http.StatusBadRequest, "invalid_request")
	if used := errDetails(t, e)["used_by"].([]any); len(used) != 1 || used[0] != v["id"] {
		t.Fatalf("used_by %v", used)
	}
	if _, err := h.admin.FailVideo(t.Context(), v["id"].(string), "test"); err != nil {
		t.Fatal(err)
	}
	del := expectAPIStatus(t, h.do("DELETE", "/v1/assets/"+id, key, nil), http.StatusOK)
	if del["deleted"] != true || del["id"] != id {
		t.Fatalf("delete answered %v", del)
	}
	expectAPIError(t, h.get(done["url"].(string)), http.StatusNotFound, "not_found")
	expectAPIError(t, h.do("GET", "/v1/assets/"+id, key, nil), http.StatusNotFound, "not_found")
}

func TestAssetRequestValidation(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"no size", `{"filename":"x.png","content_type":"image/png"}`, 400, "invalid_request"},
		{"zero size", `{"filename":"x.png","content_type":"image/png","size_bytes":0}`, 400, "invalid_request"},
		{"a size as text", `{"filename":"x.png","content_type":"image/png","size_bytes":"10"}`, 400, "invalid_request"},
		{"over the limit", `{"filename":"x.png","content_type":"image/png","size_bytes":20971521}`, 400, "invalid_request"},
		{"not an image", `{"filename":"x.pdf","content_type":"application/pdf","size_bytes":10}`, 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectAPIError(t, h.do("POST", "/v1/assets", key, tc.body), tc.status, tc.code)
		})
	}
	expectAPIError(t, h.do("GET", "/v1/assets?limit=0", key, nil), http.StatusBadRequest, "invalid_request")
	expectAPIError(t, h.do("GET", "/v1/assets?starting_after=as_nope", key, nil), http.StatusBadRequest, "invalid_request")
	expectAPIError(t, h.do("GET", "/v1/assets?color=red", key, nil), http.StatusBadRequest, "invalid_request")
}

// The leader deletes assets whose upload was never completed once they are
// older than PendingAssetTTL, bytes and all; completed ones stay.
func TestPendingAssetsExpire(t *testing.T) {
	h := start(t, func(c *server.Config) { c.PendingAssetTTL = 2 * time.Second })
	_, key := h.account("pro", 100)
	img := pngBytes(t, 8, 8, color.RGBA{1, 2, 3, 255})
	ready := h.readyAsset(key, img)
	pending := expectAPIStatus(t, h.do("POST", "/v1/assets", key, fmt.Sprintf(`{"filename":"p.png","content_type":"image/png","size_bytes":%d}`, len(img)+1)), http.StatusCreated)
	expectAPIStatus(t, h.put(pending["upload_url"].(string), "image/png", img, false), http.StatusOK)
	id := pending["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for h.do("GET", "/v1/assets/"+id, key, nil).Status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the pending asset was not expired within 30 s")
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	if blobs, err := h.srv.Blobs.Stat(t.Context(), "assets/"+id+".png"); err == nil {
		t.Fatalf("the expired asset's bytes are still stored: %+v", blobs)
	}
	expectAPIStatus(t, h.do("GET", "/v1/assets/"+ready["id"].(string), key, nil), http.StatusOK)
}
