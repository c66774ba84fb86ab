package server_test

import (
	"context"
	"errors"
	"net/http"
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
	created := h.do("POST", "/v1/videos", key, manualReq("duration_seconds", 5))
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	vid := created.json(t)["id"].(string)
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
