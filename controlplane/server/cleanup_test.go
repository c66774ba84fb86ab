package server_test

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestIntermediateBlobsDeleted: once a video completes, the leader deletes
// the blobs only its tasks needed (the render's clip) and keeps what the
// video delivers.
func TestIntermediateBlobsDeleted(t *testing.T) {
	h := start(t, withAgent(30*time.Second), func(c *server.Config) { c.GarbageInterval = 20 * time.Millisecond })
	_, key := h.account("pro", 1000)
	cred := h.registerNode("gpu-1")
	vid := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	render := h.leaseTask(cred, 5)
	if render.Kind != scheduler.KindRender {
		t.Fatalf("first task: %+v", render)
	}
	h.runTask(cred, render, "clip.mp4")
	clip := "videos/" + vid + "/render/clip.mp4"
	ctx := context.Background()
	if _, err := h.srv.Blobs.Stat(ctx, clip); err != nil {
		t.Fatalf("the render's clip is not stored: %v", err)
	}
	h.runTask(cred, h.leaseTask(cred, 5), wire.ArtifactVideo, wire.ArtifactPoster)

	eventually(t, func() bool {
		_, err := h.srv.Blobs.Stat(ctx, clip)
		return errors.Is(err, blob.ErrNotFound) && h.srv.Node.FSM.Stats().Garbage == 0
	}, "the clip of the completed video to be deleted (garbage left: %d)", h.srv.Node.FSM.Stats().Garbage)
	v := h.do("GET", "/v1/videos/"+vid, key, nil).json(t)
	if v["status"] != "completed" {
		t.Fatalf("video: %v", v)
	}
	checkFile(t, v["video_url"].(string), "video/mp4", "bytes of videos/"+vid+"/finalize/video.mp4")
	for _, k := range []string{"videos/" + vid + "/finalize/" + wire.ArtifactVideo, "videos/" + vid + "/finalize/" + wire.ArtifactPoster} {
		if _, err := h.srv.Blobs.Stat(ctx, k); err != nil {
			t.Errorf("delivered blob %s: %v", k, err)
		}
	}
}

// TestOldUploadsDeleted: the sweep deletes uploads stored longer ago than
// the retention, and nothing else.
func TestOldUploadsDeleted(t *testing.T) {
	h := start(t, func(c *server.Config) {
		c.UploadRetention = time.Hour
		c.UploadSweepInterval = 20 * time.Millisecond
	})
	_, key := h.account("pro", 100)
	img := pngBytes(t, 16, 16, color.RGBA{10, 200, 30, 255})
	upload := func() (string, string) {
		up := expectAPIStatus(t, h.do("POST", "/v1/uploads", key, `{"filename":"a.png","content_type":"image/png"}`), http.StatusCreated)
		expectAPIStatus(t, h.put(up["upload_url"].(string), "image/png", img, false), http.StatusOK)
		public := up["public_url"].(string)
		k := public[strings.Index(public, "/files/")+len("/files/") : strings.Index(public, "?")]
		return k, public
	}
	oldKey, oldURL := upload()
	freshKey, freshURL := upload()
	// An old blob that is not an upload, and the old upload, as if stored 2 h ago.
	ctx := context.Background()
	video := "videos/vid_old/finalize/video.mp4"
	if _, err := h.srv.Blobs.Put(ctx, video, strings.NewReader("a delivered video")); err != nil {
		t.Fatal(err)
	}
	dir := h.srv.Blobs.(*blob.LocalStore).Dir()
	past := time.Now().Add(-2 * time.Hour)
	for _, k := range []string{oldKey, video} {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), past, past); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() bool {
		_, err := h.srv.Blobs.Stat(ctx, oldKey)
		return errors.Is(err, blob.ErrNotFound)
	}, "the 2-hour-old upload %s to be deleted", oldKey)
	expectAPIError(t, h.get(oldURL), http.StatusNotFound, "not_found")
	if got := h.get(freshURL); got.Status != http.StatusOK || !bytes.Equal(got.Body, img) {
		t.Fatalf("the fresh upload %s answered %d", freshKey, got.Status)
	}
	if _, err := h.srv.Blobs.Stat(ctx, video); err != nil {
		t.Fatalf("an old blob outside uploads/ was touched: %v", err)
	}
}

// TestOldSpeechExpires: a finished speech sample older than the retention
// is forgotten (404) and its audio deleted.
func TestOldSpeechExpires(t *testing.T) {
	h := start(t, withAgent(30*time.Second), withSpeechWait(time.Millisecond), func(c *server.Config) {
		c.SpeechRetention = 50 * time.Millisecond
		c.UploadSweepInterval = 20 * time.Millisecond
		c.GarbageInterval = 20 * time.Millisecond
	})
	_, key := h.account("pro", 0)
	h.registerVoiceNode("tts", testVoices...)
	cred := h.registerNode("cpu-1", testVoices...)
	r := h.do("POST", "/v1/voices/speech", key, speechReq("Hello.", "en-us+f3"))
	id := r.json(t)["id"].(string)
	a := h.leaseTask(cred, 5)
	a.Video.DurationSeconds = 1
	h.runTask(cred, a, wire.ArtifactSpeech)
	audio := "videos/" + id + "/speech/" + wire.ArtifactSpeech
	eventually(t, func() bool {
		_, err := h.srv.Blobs.Stat(context.Background(), audio)
		return h.do("GET", "/v1/voices/speech/"+id, key, nil).Status == http.StatusNotFound && errors.Is(err, blob.ErrNotFound)
	}, "the sample to expire and its audio to be deleted")
}
