package server_test

import (
	"bytes"
	"fmt"
	"image/color"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/internal/fakes"
)

// uploadAsset creates a PNG asset for img and PUTs its bytes; it returns
// the asset's id.
func (h *harness) uploadAsset(key string, img []byte) string {
	h.t.Helper()
	as := expectAPIStatus(h.t, h.do("POST", "/v1/assets", key, fmt.Sprintf(`{"filename":"big.png","content_type":"image/png","size_bytes":%d}`, len(img))), http.StatusCreated)
	expectAPIStatus(h.t, h.put(as["upload_url"].(string), "image/png", img, false), http.StatusOK)
	return as["id"].(string)
}

// An image asset whose header gives more pixels than the farm's cap (the
// audit's 16000×16000 PNG of 746 KB, which made every ffmpeg that read it on
// a render node reach 880 MB), or whose header cannot be read, is refused at
// complete with the dimensions and the cap, and stays pending; one within
// the cap, up to MaxImageSide a side, completes.
func TestAssetCompleteRefusesPixelBombs(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)

	bomb := fakes.BlackPNG(t, 16000, 16000)
	if len(bomb) > 1<<20 {
		t.Fatalf("the test's bomb is %d bytes; want it under 1 MB, as the audit's", len(bomb))
	}
	truncated := bytes.Clone(fakes.BlackPNG(t, 64, 64)[:20]) // the signature and half an IHDR
	for _, tc := range []struct {
		name          string
		img           []byte
		width, height int
		says          string
	}{
		{"16000x16000", bomb, 16000, 16000, "16000x16000 pixels (256.0 megapixels)"},
		{"wider than the side cap", fakes.BlackPNG(t, api.MaxImageSide+1, 16), api.MaxImageSide + 1, 16, fmt.Sprintf("%dx16 pixels", api.MaxImageSide+1)},
		{"more pixels than the cap", fakes.BlackPNG(t, 8000, 8000), 8000, 8000, "8000x8000 pixels (64.0 megapixels)"},
		{"unreadable header", truncated, 0, 0, "header cannot be read"},
	} {
		id := h.uploadAsset(key, tc.img)
		e := expectAPIError(t, h.do("POST", "/v1/assets/"+id+"/complete", key, nil), http.StatusBadRequest, "invalid_request")
		d := errDetails(t, e)
		msg, _ := e["message"].(string)
		if !strings.Contains(msg, tc.says) || !strings.Contains(msg, "new asset") || d["asset_id"] != id ||
			jsonInt(t, d["max_side_pixels"]) != api.MaxImageSide || jsonInt(t, d["max_pixels"]) != api.MaxImagePixels {
			t.Errorf("%s: %v, want it to say %q with the asset and the cap in details", tc.name, e, tc.says)
		}
		if tc.width > 0 && (jsonInt(t, d["width"]) != int64(tc.width) || jsonInt(t, d["height"]) != int64(tc.height)) {
			t.Errorf("%s: details %v, want width %d and height %d", tc.name, d, tc.width, tc.height)
		}
		if as := expectAPIStatus(t, h.do("GET", "/v1/assets/"+id, key, nil), http.StatusOK); as["status"] != "pending" || as["url"] != nil {
			t.Errorf("%s: refused asset is %v, want it pending", tc.name, as)
		}
		// It is no more usable than any pending asset.
		e = expectAPIError(t, h.do("POST", "/v1/avatars", key, `{"kind":"photo","consent":true,"asset_id":"`+id+`"}`), http.StatusBadRequest, "invalid_request")
		if errDetails(t, e)["asset_id"] != id {
			t.Errorf("%s: a photo avatar of the refused asset: %v", tc.name, e)
		}
	}

	for _, img := range [][]byte{
		pngBytes(t, 40, 40, color.RGBA{10, 200, 90, 255}),
		fakes.BlackPNG(t, api.MaxImageSide, api.MaxImagePixels/api.MaxImageSide), // both caps, met exactly or nearly
	} {
		if as := h.readyAsset(key, img); as["status"] != "ready" {
			t.Errorf("asset within the caps: %v", as)
		}
	}
}
