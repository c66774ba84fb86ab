package agent

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func decodeAvatar(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("avatar.png: %v", err)
	}
	if img.Bounds() != image.Rect(0, 0, pipeline.AvatarSize, pipeline.AvatarSize) {
		t.Fatalf("avatar.png is %v", img.Bounds())
	}
	return img
}

func TestAvatarTasks(t *testing.T) {
	t.Parallel()
	requireTools(t, "ffmpeg")
	f := newFakeCP(t)
	images := pngServer(t)
	cfg := testConfig(t, f)
	cfg.AllowPrivateInputs = true // the image server is on 127.0.0.1
	cfg.InputRootCAs = images.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	startAgent(t, cfg)

	fromPrompt := assignment("av_prompt", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	fromPrompt.Avatar = &wire.AvatarJob{Kind: "prompt", Prompt: "a woman in a green coat"}
	fromPhoto := assignment("av_photo", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	fromPhoto.Avatar = &wire.AvatarJob{Kind: "photo", FileURL: images.URL + "/boat.png"}
	missing := assignment("av_missing", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	missing.Avatar = &wire.AvatarJob{Kind: "photo", FileURL: images.URL + "/nothing.png"}
	bare := assignment("av_bare", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	f.enqueue(fromPrompt, fromPhoto, missing, bare)

	for _, a := range []wire.Assignment{fromPrompt, fromPhoto} {
		c := waitComplete(t, f, a.TaskID)
		key := c.Artifacts[wire.ArtifactAvatar]
		if key != "videos/"+a.Video.ID+"/avatar/avatar.png" {
			t.Fatalf("%s: artifacts %v", a.TaskID, c.Artifacts)
		}
		decodeAvatar(t, f.blob(key))
	}
	for id, reason := range map[string]string{missing.TaskID: "HTTP 404", bare.TaskID: "without its avatar"} {
		expectFailed(t, f, id, reason)
	}
}

// The photo fetch follows the input rules: without the development switch
// a loopback address is refused before the agent connects.
func TestAvatarPhotoOnLoopbackRefused(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	images := pngServer(t)
	cfg := testConfig(t, f)
	cfg.InputRootCAs = images.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	startAgent(t, cfg)
	a := assignment("av_inward", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	a.Avatar = &wire.AvatarJob{Kind: "photo", FileURL: images.URL + "/boat.png"}
	f.enqueue(a)
	expectFailed(t, f, a.TaskID, "loopback address (127.0.0.0/8)")
}

func TestSpeechTask(t *testing.T) {
	t.Parallel()
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	f := newFakeCP(t)
	startAgent(t, testConfig(t, f))
	a := assignment("sp_1", scheduler.NameSpeech, scheduler.KindSpeech, wire.Video{})
	a.Speech = &wire.SpeechJob{Text: "The render farm speaks.", VoiceID: "en-gb"}
	f.enqueue(a)
	c := waitComplete(t, f, a.TaskID)
	key := c.Artifacts[wire.ArtifactSpeech]
	if key != "videos/sp_1/speech/speech.m4a" || c.DurationSeconds <= 0 {
		t.Fatalf("completion %+v", c)
	}
	path := filepath.Join(t.TempDir(), "speech.m4a")
	if err := os.WriteFile(path, f.blob(key), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := pipeline.Probe(t.Context(), path)
	if err != nil || info.AudioCodec != "aac" || info.Duration <= 0 {
		t.Fatalf("speech.m4a: %+v %v", info, err)
	}
}
