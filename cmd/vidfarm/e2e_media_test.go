package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
)

// newMediaFarm is an e2e farm whose public listener is reached over HTTPS
// through a TLS proxy on 127.0.0.1, as a production farm sits behind TLS:
// file URLs (upload_url, public_url) are https, and the agents, which fetch
// input images over https only, trust the proxy's certificate.
func newMediaFarm(t *testing.T, grant int64) (*e2eFarm, string) {
	t.Helper()
	requireE2E(t)
	f := &e2eFarm{t: t, dir: t.TempDir(), hits: map[string]int{}}
	f.startImages()
	var target atomic.Pointer[url.URL]
	proxy := httptest.NewUnstartedServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target.Load())
		f.hitsMu.Lock()
		f.hits[r.In.Method+" "+r.In.URL.Path]++
		f.hitsMu.Unlock()
	}})
	proxy.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	proxy.StartTLS()
	t.Cleanup(proxy.Close)
	certs, err := os.ReadFile(f.certFile)
	if err != nil {
		t.Fatal(err)
	}
	certs = append(certs, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw})...)
	if err := os.WriteFile(f.certFile, certs, 0o644); err != nil {
		t.Fatal(err)
	}
	f.srv, _ = f.startServer("--public-url", proxy.URL)
	u, err := url.Parse(f.srv.public)
	if err != nil {
		t.Fatal(err)
	}
	target.Store(u)
	a, err := f.srv.admin.CreateAccount(context.Background(), "e2e-media", "pro", grant)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	f.accountID, f.apiKey = a.AccountID, a.APIKey
	return f, proxy.URL
}

// solidPNG is a w×h PNG of one colour.
func solidPNG(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// putBytes PUTs body to a presigned upload URL, sent to the server directly
// (the signature covers the path, not the host).
func (f *e2eFarm) putBytes(uploadURL, proxyURL, contentType string, body []byte) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPut, strings.Replace(uploadURL, proxyURL, f.srv.public, 1), bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("PUT %s: %d", uploadURL, resp.StatusCode)
	}
}

// readyAsset creates, uploads and completes an image asset.
func (f *e2eFarm) readyAsset(proxyURL string, img []byte) string {
	f.t.Helper()
	as := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/assets", f.apiKey,
		fmt.Sprintf(`{"filename":"a.png","content_type":"image/png","size_bytes":%d}`, len(img))).obj(f.t)
	f.putBytes(as["upload_url"].(string), proxyURL, "image/png", img)
	id := as["id"].(string)
	f.srv.must(http.StatusOK, http.MethodPost, "/v1/assets/"+id+"/complete", f.apiKey, "")
	return id
}

// frameRGB decodes the frame at second at of a video as packed RGB.
func frameRGB(t *testing.T, video string, at float64, w, h int) []byte {
	t.Helper()
	out, err := pipeline.OSExecutor{}.Run(context.Background(), pipeline.Command{Name: "ffmpeg", Args: []string{"-v", "error",
		"-ss", fmt.Sprint(at), "-i", video, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"}})
	if err != nil {
		t.Fatalf("decode a frame of %s: %v", video, err)
	}
	if len(out) != w*h*3 {
		t.Fatalf("frame of %d bytes, want %dx%dx3", len(out), w, h)
	}
	return out
}

// TestE2EUploadsAssetsAndBrandKits: an upload's public_url renders as a
// manual video's image_url (the agent fetches it over https like any input
// image), and an auto video with a brand kit and a file asset shows the
// asset as its scene, the kit's colour in the lower-third bar and the kit's
// logo asset in the top-right corner.
func TestE2EUploadsAssetsAndBrandKits(t *testing.T) {
	f, proxyURL := newMediaFarm(t, 500)
	f.startAgent("media-1")

	up := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/uploads", f.apiKey, `{"filename":"boat.png","content_type":"image/png"}`).obj(t)
	publicURL := up["public_url"].(string)
	if !strings.HasPrefix(publicURL, proxyURL+"/files/uploads/") {
		t.Fatalf("public_url %s is not under %s", publicURL, proxyURL)
	}
	f.putBytes(up["upload_url"].(string), proxyURL, "image/png", solidPNG(t, 320, 180, color.RGBA{230, 120, 20, 255}))
	manual := f.createVideo(manualBody("a boat", `,"image_url":"`+publicURL+`"`))
	f.waitStatus(manual["id"].(string), "completed", 3*time.Minute)
	pubPath, _ := url.Parse(publicURL)
	f.hitsMu.Lock()
	fetched := f.hits["GET "+pubPath.Path]
	f.hitsMu.Unlock()
	if fetched == 0 {
		t.Fatal("the agent never fetched the upload's public_url")
	}

	scene := f.readyAsset(proxyURL, solidPNG(t, 320, 180, color.RGBA{20, 200, 40, 255}))
	logo := f.readyAsset(proxyURL, solidPNG(t, 64, 32, color.RGBA{250, 20, 20, 255}))
	kit := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/brand-kits", f.apiKey,
		`{"name":"Blue Co","colors":["#0000ff","#ffff00"],"fonts":["No Such Typeface","DejaVu Sans"],"motion_style":"calm","logo_asset_id":"`+logo+`"}`).obj(t)
	auto := f.createVideo(`{"mode":"auto","prompt":"A green field.","duration_seconds":5,"brand_kit_id":"` + kit["id"].(string) +
		`","file_asset_ids":["` + scene + `"]}`)
	v := f.waitStatus(auto["id"].(string), "completed", 4*time.Minute)
	clean := f.download(strings.Replace(v["video_url_no_captions"].(string), proxyURL, f.srv.public, 1), "branded.mp4")
	const w, h = 1280, 720
	checkMP4(t, clean, 5, w, h, true)
	px := frameRGB(t, clean, 1.5, w, h)
	at := func(x, y int) color.RGBA {
		i := (y*w + x) * 3
		return color.RGBA{px[i], px[i+1], px[i+2], 255}
	}
	for _, c := range []struct {
		what  string
		x, y  int
		check func(c color.RGBA) bool
	}{
		// The lower-third bar (bottom 16% of the frame) is the kit's first
		// colour at 85% over the scene: blue.
		{"lower-third bar", w / 10, h - 50, func(c color.RGBA) bool { return c.B > 170 && c.R < 60 && c.G < 90 }},
		// The logo asset (2:1) fits 10% of the height, 3% from the top right.
		{"logo", w - 22 - 72, 22 + 36, func(c color.RGBA) bool { return c.R > 200 && c.G < 70 && c.B < 70 }},
		// The scene is the green asset, animated.
		{"scene", w / 3, h / 3, func(c color.RGBA) bool { return c.G > 120 && c.G > c.R+60 && c.G > c.B+60 }},
	} {
		if got := at(c.x, c.y); !c.check(got) {
			t.Errorf("%s at (%d,%d) is %v", c.what, c.x, c.y, got)
		}
	}
	if t.Failed() {
		_ = os.WriteFile(filepath.Join(os.TempDir(), "vidfarm-branded-frame.rgb"), px, 0o644)
	}
}
