package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
)

// waitAvatar polls an avatar until it is ready; a failed one fails the test.
func (f *e2eFarm) waitAvatar(id string, timeout time.Duration) map[string]any {
	f.t.Helper()
	var av map[string]any
	eventually(f.t, timeout, "avatar "+id+" ready", func() bool {
		av = f.srv.must(http.StatusOK, http.MethodGet, "/v1/avatars/"+id, f.apiKey, "").obj(f.t)
		if av["status"] == "failed" {
			f.t.Fatalf("avatar %s failed: %v", id, av)
		}
		return av["status"] == "ready"
	})
	return av
}

// decodePNG reads a PNG file and checks its size.
func decodePNG(t *testing.T, path string, w, h int) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if img.Bounds() != image.Rect(0, 0, w, h) {
		t.Fatalf("%s is %v, want %dx%d", filepath.Base(path), img.Bounds(), w, h)
	}
	return img
}

// faceColoured counts the pixels of img within 40 of faceColour per channel.
func faceColoured(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near8(r, faceColour.R) && near8(g, faceColour.G) && near8(bl, faceColour.B) {
				n++
			}
		}
	}
	return n
}

func near8(v uint32, want uint8) bool {
	d := int(v>>8) - int(want)
	return d > -40 && d < 40
}

// frameAt extracts the frame at second sec of a video as a PNG.
func frameAt(t *testing.T, video string, sec float64) image.Image {
	t.Helper()
	out := strings.TrimSuffix(video, filepath.Ext(video)) + fmt.Sprintf("-%g.png", sec)
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-ss", fmt.Sprint(sec), "-i", video, "-frames:v", "1", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("extract frame: %v: %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestE2EAvatarsAndSpeech, through the public API and real processes: a
// speech sample comes back as real audio; an avatar drawn from a prompt and
// one made from a photo become ready as 512×512 PNGs; and an auto video
// presented by the photo avatar shows that photo where the default presenter
// is not.
func TestE2EAvatarsAndSpeech(t *testing.T) {
	f := newE2EFarm(t, 100)
	f.startAgent("agent-1")

	// Speech: the request waits for the idle agent and answers with the audio.
	sp := f.srv.must(http.StatusOK, http.MethodPost, "/v1/voices/speech", f.apiKey,
		`{"text":"Welcome to the render farm. This sample was spoken by espeak-ng.","voice_id":"en-us+f3"}`).obj(t)
	audio := f.download(sp["audio_url"].(string), "speech.m4a")
	info, err := pipeline.Probe(context.Background(), audio)
	if err != nil || info.AudioCodec != "aac" || info.Duration <= 0 || num(sp, "duration_seconds") <= 0 {
		t.Fatalf("speech audio: %+v %v (sample %v)", info, err, sp)
	}
	f.srv.must(http.StatusBadRequest, http.MethodPost, "/v1/voices/speech", f.apiKey, `{"text":"hi","voice_id":"no-such-voice"}`)
	f.srv.must(http.StatusBadRequest, http.MethodPost, "/v1/voices/speech", f.apiKey,
		fmt.Sprintf(`{"text":%q,"voice_id":"en-us"}`, strings.Repeat("a", 301)))

	// Avatars.
	drawn := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/avatars", f.apiKey,
		`{"kind":"prompt","prompt":"a friendly man in a blue shirt","name":"Sam"}`).obj(t)
	photo := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/avatars", f.apiKey,
		fmt.Sprintf(`{"kind":"photo","file_url":%q,"consent":true,"name":"Me"}`, f.images.URL+"/img/face.png")).obj(t)
	f.srv.must(http.StatusBadRequest, http.MethodPost, "/v1/avatars", f.apiKey,
		fmt.Sprintf(`{"kind":"photo","file_url":%q}`, f.images.URL+"/img/face.png"))
	for _, av := range []map[string]any{drawn, photo} {
		ready := f.waitAvatar(av["id"].(string), 60*time.Second)
		decodePNG(t, f.download(ready["image_url"].(string), av["id"].(string)+".png"), pipeline.AvatarSize, pipeline.AvatarSize)
	}
	ready := f.waitAvatar(photo["id"].(string), time.Second)
	if n := faceColoured(decodePNG(t, f.download(ready["image_url"].(string), "photo.png"), pipeline.AvatarSize, pipeline.AvatarSize)); n != pipeline.AvatarSize*pipeline.AvatarSize {
		t.Fatalf("the photo avatar has %d pixels of the photo's colour, want all", n)
	}

	// The same photo uploaded as an asset makes the same avatar; the asset is
	// the account's, and a photo comes from file_url or asset_id, not both.
	resp, err := f.images.Client().Get(f.images.URL + "/img/face.png")
	if err != nil {
		t.Fatal(err)
	}
	face, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	asID := f.readyAsset(f.srv.public, face)
	fromAsset := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/avatars", f.apiKey,
		fmt.Sprintf(`{"kind":"photo","asset_id":%q,"consent":true}`, asID)).obj(t)
	f.srv.must(http.StatusBadRequest, http.MethodPost, "/v1/avatars", f.apiKey,
		fmt.Sprintf(`{"kind":"photo","asset_id":%q,"file_url":%q,"consent":true}`, asID, f.images.URL+"/img/face.png"))
	f.srv.must(http.StatusBadRequest, http.MethodPost, "/v1/avatars", f.apiKey, `{"kind":"photo","asset_id":"as_nosuchasset","consent":true}`)
	fromAssetReady := f.waitAvatar(fromAsset["id"].(string), 60*time.Second)
	if n := faceColoured(decodePNG(t, f.download(fromAssetReady["image_url"].(string), "asset-photo.png"), pipeline.AvatarSize, pipeline.AvatarSize)); n != pipeline.AvatarSize*pipeline.AvatarSize {
		t.Fatalf("the avatar made from an asset has %d pixels of the photo's colour, want all", n)
	}

	// The same auto video with the photo avatar and with the default presenter.
	body := `{"mode":"auto","prompt":"A short tour of a lighthouse at dawn.","duration_seconds":5%s}`
	own := f.createVideo(fmt.Sprintf(body, fmt.Sprintf(`,"avatar_id":%q`, photo["id"])))["id"].(string)
	stock := f.createVideo(fmt.Sprintf(body, ""))["id"].(string)
	counts := map[string]int{}
	for name, id := range map[string]string{"own": own, "stock": stock} {
		v := f.waitStatus(id, "completed", 120*time.Second)
		counts[name] = faceColoured(frameAt(t, f.download(v["video_url_no_captions"].(string), name+".mp4"), 2))
	}
	// A presenter badge at 720p is over 10,000 pixels.
	if counts["own"] < 5000 || counts["own"] < 10*counts["stock"] {
		t.Fatalf("pixels of the photo's colour in a frame: %d with the photo avatar, %d with the default presenter", counts["own"], counts["stock"])
	}
}
