package server_test

import (
	"bytes"
	"image/color"
	"net/http"
	"testing"
	"time"
)

// The assignment of an auto video's task carries its brand kit and file
// assets; agents may read asset blobs but never write them.
func TestAssignmentCarriesBrandKitAndAssets(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 100)
	logoPNG := pngBytes(t, 8, 8, color.RGBA{255, 0, 0, 255})
	logo := h.readyAsset(key, logoPNG)
	scene := h.readyAsset(key, pngBytes(t, 8, 8, color.RGBA{0, 255, 0, 255}))
	kit := expectAPIStatus(t, h.do("POST", "/v1/brand-kits", key, `{"name":"k","colors":["#112233","#445566"],"fonts":["Inter","DejaVu Sans"],"motion_style":"dynamic","logo_asset_id":"`+logo["id"].(string)+`"}`), http.StatusCreated)
	v := h.create(key, `{"mode":"auto","prompt":"fields","brand_kit_id":"`+kit["id"].(string)+`","file_asset_ids":["`+scene["id"].(string)+`"]}`)

	cred := h.registerNode("media-node")
	a := h.leaseTask(cred, 5)
	if a.Video.ID != v["id"] {
		t.Fatalf("leased %s, want a task of %s", a.TaskID, v["id"])
	}
	b := a.Video.Brand
	if b == nil || !jsonEqual(t, b.Colors, []string{"#112233", "#445566"}) || b.LogoURL != "" || b.LogoInput != "brand/logo.png" ||
		!jsonEqual(t, b.Fonts, []string{"Inter", "DejaVu Sans"}) || b.MotionStyle != "dynamic" {
		t.Fatalf("assignment brand %+v", b)
	}
	wantScene := "assets/" + scene["id"].(string) + ".png"
	if !jsonEqual(t, a.Video.AssetInputs, []string{wantScene}) || a.Inputs[wantScene] == "" || a.Inputs[b.LogoInput] == "" {
		t.Fatalf("assignment inputs %v, asset inputs %v", a.Inputs, a.Video.AssetInputs)
	}
	got := h.agentCall("GET", "/agent/v1/blobs/"+a.Inputs[b.LogoInput], cred, nil)
	if got.Status != http.StatusOK || !bytes.Equal(got.Body, logoPNG) {
		t.Fatalf("GET the logo blob: %d, %d bytes", got.Status, len(got.Body))
	}
	if r := h.agentCall("PUT", "/agent/v1/blobs/"+a.Inputs[b.LogoInput]+"?lease_token=1", cred, []byte("x")); r.Status != http.StatusBadRequest {
		t.Fatalf("PUT over an asset blob answered %d, want 400: %s", r.Status, r.Body)
	}
	if got := h.agentCall("GET", "/agent/v1/blobs/"+a.Inputs[b.LogoInput], cred, nil); !bytes.Equal(got.Body, logoPNG) {
		t.Fatal("the asset changed")
	}
}
