package server_test

import (
	"fmt"
	"image/color"
	"net/http"
	"net/http/httptest"
	"strings"
)

// mediaScenario runs the upload, asset and brand-kit exchanges of the OpenAPI
// test and returns a ready asset and a kit for the videos that follow.
func (o *oas) mediaScenario(h *harness, key string) (assetID, kitID string) {
	t := o.t
	t.Helper()
	up := o.run(h, exchange{name: "upload", method: "POST", path: "/v1/uploads", key: key,
		body: []byte(`{"filename":"frame.png","content_type":"image/png"}`), status: 201, template: "/v1/uploads"})
	img := pngBytes(t, 16, 16, color.RGBA{0, 90, 200, 255})
	expectAPIStatus(t, h.put(up["upload_url"].(string), "image/png", img, false), http.StatusOK)
	o.run(h, exchange{name: "upload, a video type", method: "POST", path: "/v1/uploads", key: key,
		body: []byte(`{"filename":"a.mp4","content_type":"video/mp4"}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/uploads"})

	as := o.run(h, exchange{name: "create asset", method: "POST", path: "/v1/assets", key: key,
		body: fmt.Appendf(nil, `{"filename":"logo.png","content_type":"image/png","size_bytes":%d}`, len(img)), status: 201, template: "/v1/assets"})
	assetID = as["id"].(string)
	o.run(h, exchange{name: "asset too large", method: "POST", path: "/v1/assets", key: key,
		body: []byte(`{"filename":"logo.png","content_type":"image/png","size_bytes":20971521}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/assets"})
	o.run(h, exchange{name: "complete before the upload", method: "POST", path: "/v1/assets/" + assetID + "/complete", key: key,
		status: 400, code: "invalid_request", template: "/v1/assets/{id}/complete"})
	expectAPIStatus(t, h.put(as["upload_url"].(string), "image/png", img, false), http.StatusOK)
	o.run(h, exchange{name: "complete asset", method: "POST", path: "/v1/assets/" + assetID + "/complete", key: key,
		body: []byte(`{}`), status: 200, template: "/v1/assets/{id}/complete"})
	o.run(h, exchange{name: "get asset", method: "GET", path: "/v1/assets/" + assetID, key: key, status: 200, template: "/v1/assets/{id}"})
	o.run(h, exchange{name: "list assets", method: "GET", path: "/v1/assets?limit=10", key: key, status: 200, template: "/v1/assets"})
	o.run(h, exchange{name: "list assets, bad limit", method: "GET", path: "/v1/assets?limit=0", key: key, req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/assets"})
	o.run(h, exchange{name: "unknown asset", method: "GET", path: "/v1/assets/as_nope", key: key, status: 404, code: "not_found", template: "/v1/assets/{id}"})

	kit := o.run(h, exchange{name: "create brand kit", method: "POST", path: "/v1/brand-kits", key: key,
		body:   []byte(`{"name":"Lantern Co","colors":["#E63946","#f1faee"],"fonts":["Inter"],"motion_style":"calm","brand_identity":"Warm light.","logo_asset_id":"` + assetID + `"}`),
		status: 201, template: "/v1/brand-kits"})
	kitID = kit["id"].(string)
	o.run(h, exchange{name: "brand kit, bad colour", method: "POST", path: "/v1/brand-kits", key: key,
		body: []byte(`{"name":"k","colors":["red"]}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/brand-kits"})
	o.run(h, exchange{name: "brand kit, private logo", method: "POST", path: "/v1/brand-kits", key: key,
		body: []byte(`{"name":"k","logo_url":"https://10.0.0.1/logo.png"}`), status: 400, code: "invalid_url", template: "/v1/brand-kits"})
	o.run(h, exchange{name: "list brand kits", method: "GET", path: "/v1/brand-kits", key: key, status: 200, template: "/v1/brand-kits"})
	o.run(h, exchange{name: "delete unknown kit", method: "DELETE", path: "/v1/brand-kits/br_nope", key: key, status: 404, code: "not_found", template: "/v1/brand-kits/{id}"})

	// from-url, on a node with the development switch so it can reach a local page.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(brandPage))
	}))
	t.Cleanup(site.Close)
	dev := start(t, withPrivateURLs())
	_, devKey := dev.account("pro", 10)
	o.run(dev, exchange{name: "brand kit from url", method: "POST", path: "/v1/brand-kits/from-url", key: devKey,
		body: []byte(`{"url":"` + site.URL + `/"}`), status: 200, template: "/v1/brand-kits/from-url"})
	o.run(h, exchange{name: "brand kit from a private url", method: "POST", path: "/v1/brand-kits/from-url", key: key,
		body: []byte(`{"url":"` + strings.Replace(site.URL, "http:", "https:", 1) + `/"}`), status: 400, code: "invalid_url", template: "/v1/brand-kits/from-url"})
	return assetID, kitID
}

// probeID is an id of the kind a documented path takes, for requests that
// only probe the router.
func probeID(path string) string {
	switch {
	case strings.HasPrefix(path, "/v1/brand-kits/"):
		return "br_probe"
	case strings.HasPrefix(path, "/v1/assets/"):
		return "as_probe"
	}
	return "vid_probe"
}
