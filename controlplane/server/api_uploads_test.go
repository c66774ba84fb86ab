package server_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/api"
)

// pngBytes draws a w×h PNG filled with c.
func pngBytes(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// put sends body to a presigned URL with the given Content-Type; a nil
// length hint sends it chunked, without Content-Length.
func (h *harness) put(url, contentType string, body []byte, chunked bool) response {
	h.t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(bytes.NewReader(body)) // hides the length
	}
	req, err := http.NewRequest(http.MethodPut, url, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	return h.send(req)
}

func TestUploadsRoundTrip(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	up := expectAPIStatus(t, h.do("POST", "/v1/uploads", key, `{"filename":"boat.png","content_type":"image/png"}`), http.StatusCreated)
	for _, f := range []string{"upload_url", "public_url"} {
		if s, _ := up[f].(string); !strings.HasPrefix(s, h.base+"/files/uploads/") {
			t.Fatalf("%s = %v, want a signed URL under %s/files/uploads/", f, up[f], h.base)
		}
	}
	if up["upload_headers"].(map[string]any)["Content-Type"] != "image/png" || jsonInt(t, up["max_size_bytes"]) != api.MaxUploadBytes {
		t.Fatalf("upload headers or size limit: %v", up)
	}
	uploadURL, publicURL := up["upload_url"].(string), up["public_url"].(string)
	img := pngBytes(t, 64, 32, color.RGBA{200, 30, 30, 255})

	// Nothing is there before the PUT.
	expectAPIError(t, h.get(publicURL), http.StatusNotFound, "not_found")
	// The public URL does not accept a PUT, nor the upload URL a GET.
	expectAPIError(t, h.put(publicURL, "image/png", img, false), http.StatusForbidden, "invalid_request")
	expectAPIError(t, h.get(uploadURL), http.StatusForbidden, "invalid_request")
	// Tampering with the signature or the path is refused.
	expectAPIError(t, h.put(strings.Replace(uploadURL, "signature=", "signature=00", 1), "image/png", img, false), http.StatusForbidden, "invalid_request")
	expectAPIError(t, h.put(strings.Replace(uploadURL, ".png", ".gif", 1), "image/gif", img, false), http.StatusForbidden, "invalid_request")

	for _, tc := range []struct {
		name    string
		ct      string
		body    []byte
		chunked bool
		status  int
		code    string
		detail  string
	}{
		{name: "another Content-Type header", ct: "image/jpeg", body: img, status: 400, code: "invalid_request", detail: "expected"},
		{name: "bytes that are not a PNG", ct: "image/png", body: []byte("GIF89a not really a png at all"), status: 400, code: "invalid_request", detail: "detected"},
		{name: "an empty body", ct: "image/png", body: nil, status: 400, code: "invalid_request", detail: "detected"},
		{name: "over the limit, declared", ct: "image/png", body: append(img, make([]byte, api.MaxUploadBytes)...), status: 413, code: "payload_too_large", detail: "max_bytes"},
		{name: "over the limit, chunked", ct: "image/png", body: append(img, make([]byte, api.MaxUploadBytes)...), chunked: true, status: 413, code: "payload_too_large", detail: "max_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectAPIError(t, h.put(uploadURL, tc.ct, tc.body, tc.chunked), tc.status, tc.code)
			if _, ok := errDetails(t, e)[tc.detail]; !ok {
				t.Fatalf("details lack %q: %v", tc.detail, e)
			}
			// Nothing was stored.
			expectAPIError(t, h.get(publicURL), http.StatusNotFound, "not_found")
		})
	}

	receipt := expectAPIStatus(t, h.put(uploadURL, "image/png", img, false), http.StatusOK)
	if jsonInt(t, receipt["size_bytes"]) != int64(len(img)) {
		t.Fatalf("receipt %v, want %d bytes", receipt, len(img))
	}
	got := h.get(publicURL)
	if got.Status != http.StatusOK || !bytes.Equal(got.Body, img) || got.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("public_url answered %d %q with %d bytes, want the %d uploaded PNG bytes", got.Status, got.Header.Get("Content-Type"), len(got.Body), len(img))
	}
}

func TestUploadRequestValidation(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"no filename", `{"content_type":"image/png"}`, "filename"},
		{"a path as filename", `{"filename":"../x.png","content_type":"image/png"}`, "filename"},
		{"no content type", `{"filename":"x.png"}`, "content_type"},
		{"a video", `{"filename":"x.mp4","content_type":"video/mp4"}`, "content_type"},
		{"an unknown field", `{"filename":"x.png","content_type":"image/png","size":3}`, "size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectAPIError(t, h.do("POST", "/v1/uploads", key, tc.body), http.StatusBadRequest, "invalid_request")
			if f := errDetails(t, e)["field"]; f != tc.field {
				t.Fatalf("details.field = %v, want %s", f, tc.field)
			}
		})
	}
	expectAPIError(t, h.do("POST", "/v1/uploads", "", `{"filename":"x.png","content_type":"image/png"}`), http.StatusUnauthorized, "missing_api_key")
}

func TestUploadsShareTheMediaRateLimit(t *testing.T) {
	h := start(t, withLimits(api.Limits{Media: []api.Rate{{Tokens: 2, Interval: time.Minute}}}))
	_, key := h.account("pro", 100)
	body := `{"filename":"x.png","content_type":"image/png"}`
	expectAPIStatus(t, h.do("POST", "/v1/uploads", key, body), http.StatusCreated)
	expectAPIStatus(t, h.do("POST", "/v1/assets", key, `{"filename":"x.png","content_type":"image/png","size_bytes":10}`), http.StatusCreated)
	e := expectAPIError(t, h.do("POST", "/v1/uploads", key, body), http.StatusTooManyRequests, "rate_limited")
	if errDetails(t, e)["limit"] != "2 per minute" {
		t.Fatalf("details %v", e)
	}
	// A refused request does not spend the budget.
	_, other := h.account("pro", 100)
	expectAPIError(t, h.do("POST", "/v1/uploads", other, `{"filename":"x.png"}`), http.StatusBadRequest, "invalid_request")
	expectAPIStatus(t, h.do("POST", "/v1/uploads", other, body), http.StatusCreated)
}
