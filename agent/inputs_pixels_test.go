package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/image/bmp"

	"github.com/vidfarm/vidfarm/internal/fakes"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// pixelHeaders are small files of each type the agent accepts whose headers
// say w×h: only the header is valid, which is all a size check may read.
func pixelHeaders(t testing.TB, w, h int) map[string][]byte {
	t.Helper()
	small := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	var g, b bytes.Buffer
	if err := gif.Encode(&g, small, nil); err != nil {
		t.Fatal(err)
	}
	if err := bmp.Encode(&b, small); err != nil {
		t.Fatal(err)
	}
	gifData, bmpData := g.Bytes(), b.Bytes()
	binary.LittleEndian.PutUint16(gifData[6:], uint16(w)) // logical screen size
	binary.LittleEndian.PutUint16(gifData[8:], uint16(h))
	binary.LittleEndian.PutUint32(bmpData[18:], uint32(w)) // BITMAPINFOHEADER
	binary.LittleEndian.PutUint32(bmpData[22:], uint32(h))
	// A JPEG's JFIF segment and start of frame (baseline, 3 components), and
	// a WebP's VP8X chunk.
	jpegData := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
		0xFF, 0xC0, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1}
	vp8x := []byte{0, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
	webpData := slices.Concat([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+8+len(vp8x))), []byte("WEBPVP8X"),
		binary.LittleEndian.AppendUint32(nil, uint32(len(vp8x))), vp8x)
	return map[string][]byte{"png": fakes.BlackPNG(t, w, h), "gif": gifData, "bmp": bmpData, "jpg": jpegData, "webp": webpData}
}

// pixelServer serves files by name over https from 127.0.0.1.
func pixelServer(t *testing.T, files map[string][]byte) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An input image whose header gives more pixels than the cap, whatever its
// type, or whose header cannot be read, is refused as unusable input,
// naming the address, the dimensions and the cap; one within the cap is
// downloaded.
func TestInputFetchPixelCap(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	for ext, data := range pixelHeaders(t, 16000, 16000) {
		files["bomb."+ext] = data
	}
	for ext, data := range pixelHeaders(t, 64, 48) {
		files["ok."+ext] = data
	}
	files["wide.png"] = fakes.BlackPNG(t, MaxInputImageSide+1, 16)
	files["many.png"] = fakes.BlackPNG(t, 8000, 8000)
	files["edge.png"] = fakes.BlackPNG(t, MaxInputImageSide, MaxInputImagePixels/MaxInputImageSide)
	files["cut.png"] = files["ok.png"][:20] // the signature and half an IHDR
	if n := len(files["bomb.png"]); n > 1<<20 {
		t.Fatalf("the test's bomb is %d bytes; want it under 1 MB, as the audit's", n)
	}
	srv := pixelServer(t, files)
	f := newInputFetcher(true, srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
	ctx := context.Background()
	for name := range files {
		_, err := f.fetch(ctx, srv.URL+"/"+name, filepath.Join(t.TempDir(), "x"))
		var want string
		switch {
		case strings.HasPrefix(name, "ok.") || name == "edge.png":
			if err != nil {
				t.Errorf("fetch %s: %v", name, err)
			}
			continue
		case strings.HasPrefix(name, "bomb."):
			want = "/" + name + " is 16000x16000 pixels (256.0 megapixels)"
		case name == "wide.png":
			want = fmt.Sprintf("/wide.png is %dx16 pixels (0.1 megapixels)", MaxInputImageSide+1)
		case name == "many.png":
			want = "/many.png is 8000x8000 pixels (64.0 megapixels)"
		case name == "cut.png":
			want = "/cut.png starts as image/png but its header cannot be read"
		}
		if name != "cut.png" {
			want += "; images may be at most 8192 pixels a side and 50 megapixels: scale it down"
		}
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInputRefused) || !isUnusableInput(err) {
			t.Errorf("fetch %s = %v (unusable %v), want unusable input containing %q", name, err, isUnusableInput(err), want)
		}
	}
}

// noInputTools is an Executor that refuses, and records, every command that
// reads a file of a task (an argument in the work dir) and runs the rest
// (the agent's probes of its tools at start).
type noInputTools struct {
	workDir string
	mu      sync.Mutex
	seen    []string
}

func (e *noInputTools) Run(ctx context.Context, cmd pipeline.Command) ([]byte, error) {
	for _, a := range cmd.Args {
		if strings.Contains(a, e.workDir) {
			e.mu.Lock()
			e.seen = append(e.seen, cmd.Name+" "+strings.Join(cmd.Args, " "))
			e.mu.Unlock()
			return nil, fmt.Errorf("test: %s must not read a task's input", cmd.Name)
		}
	}
	return pipeline.OSExecutor{}.Run(ctx, cmd)
}

func (e *noInputTools) commands() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// permanentFails records the permanent flag of every fail report f takes.
func permanentFails(f *fakeCP) func(id string) (permanent, reported bool) {
	var mu sync.Mutex
	got := map[string]bool{}
	f.Outage = func(r *http.Request) bool {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/fail") {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var fr wire.FailRequest
		if json.Unmarshal(body, &fr) == nil {
			mu.Lock()
			got[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/agent/v1/tasks/"), "/fail")] = fr.Permanent
			mu.Unlock()
		}
		return false
	}
	return func(id string) (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		p, ok := got[id]
		return p, ok
	}
}

// The audit's 16000x16000 PNG of a few KB as a manual video's image_url,
// as one of its first/last frames or multiple images, or as a photo
// avatar's file_url fails the task permanently, with a reason that names
// the image, its dimensions and the cap, before ffmpeg sees it.
func TestOversizedInputImageFailsPermanently(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	permanent := permanentFails(f)
	images := pixelServer(t, map[string][]byte{
		"bomb.png": fakes.BlackPNG(t, 16000, 16000),
		"wide.png": fakes.BlackPNG(t, MaxInputImageSide+1, 16),
		"ok.png":   fakes.BlackPNG(t, 64, 48),
	})
	cfg := testConfig(t, f)
	cfg.AllowPrivateInputs = true // the image server is on 127.0.0.1
	cfg.InputRootCAs = images.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tools := &noInputTools{workDir: cfg.WorkDir}
	cfg.Tools = &pipeline.Tools{Preset: "ultrafast", Exec: tools}
	startAgent(t, cfg)

	manual := func(id, op string, o wire.VideoOptions) wire.Assignment {
		a := assignment(id, "render", scheduler.KindRender, wire.Video{Mode: "manual", Model: "kling-2.1-pro", Operation: op,
			Prompt: "the boat sails away", Resolution: "120p", AspectRatio: "16:9", DurationSeconds: 2, VideoOptions: o})
		a.GPUIDs = []string{"virtual-0"}
		return a
	}
	u := func(name string) string { return images.URL + "/" + name }
	avatar := assignment("av_bomb", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	avatar.Avatar = &wire.AvatarJob{Kind: "photo", FileURL: u("bomb.png")}
	cases := []struct {
		a    wire.Assignment
		want string
	}{
		{manual("vid_image", pipeline.ImageToVideo, wire.VideoOptions{ImageURL: u("bomb.png")}), "/bomb.png is 16000x16000 pixels (256.0 megapixels)"},
		{manual("vid_frames", pipeline.FirstLastFrame, wire.VideoOptions{FirstFrameURL: u("ok.png"), LastFrameURL: u("wide.png")}),
			fmt.Sprintf("/wide.png is %dx16 pixels", MaxInputImageSide+1)},
		{manual("vid_images", pipeline.MultipleImages, wire.VideoOptions{ImageURLs: []string{u("ok.png"), u("bomb.png")}}), "/bomb.png is 16000x16000 pixels"},
		{avatar, "avatar photo: input image refused: " + u("bomb.png") + " is 16000x16000 pixels"},
	}
	for _, tc := range cases {
		f.enqueue(tc.a)
	}
	for _, tc := range cases {
		expectFailed(t, f, tc.a.TaskID, tc.want)
		expectFailed(t, f, tc.a.TaskID, "images may be at most 8192 pixels a side and 50 megapixels: scale it down")
		waitFor(t, "the fail report of "+tc.a.TaskID, func() bool { _, ok := permanent(tc.a.TaskID); return ok })
		if p, _ := permanent(tc.a.TaskID); !p {
			fr, _ := f.failed(tc.a.TaskID)
			t.Errorf("%s failed (%s) but not permanently", tc.a.TaskID, fr.Reason)
		}
	}
	if seen := tools.commands(); len(seen) > 0 {
		t.Errorf("tools read the tasks' inputs: %q", seen)
	}
}

// An image the account stored with the control plane (a photo avatar's
// uploaded picture, a file asset shown as a scene) is checked as a
// downloaded one is: an asset completed before the control plane checked
// pixels fails the task permanently before any tool reads it.
func TestOversizedStoredImageFailsPermanently(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	permanent := permanentFails(f)
	f.mu.Lock()
	f.blobs["assets/as_bomb.png"] = fakes.BlackPNG(t, 16000, 16000)
	f.mu.Unlock()
	cfg := testConfig(t, f)
	tools := &noInputTools{workDir: cfg.WorkDir}
	cfg.Tools = &pipeline.Tools{Preset: "ultrafast", Exec: tools}
	startAgent(t, cfg)

	avatar := assignment("av_stored", scheduler.NameAvatar, scheduler.KindAvatar, wire.Video{})
	avatar.Avatar = &wire.AvatarJob{Kind: "photo", PhotoInput: wire.InputAvatarPhoto}
	avatar.Inputs = map[string]string{wire.InputAvatarPhoto: "assets/as_bomb.png"}
	f.enqueue(avatar)
	expectFailed(t, f, avatar.TaskID, "input "+wire.InputAvatarPhoto+" is 16000x16000 pixels (256.0 megapixels)")
	waitFor(t, "the fail report of "+avatar.TaskID, func() bool { _, ok := permanent(avatar.TaskID); return ok })
	if p, _ := permanent(avatar.TaskID); !p {
		t.Errorf("%s failed but not permanently", avatar.TaskID)
	}
	if seen := tools.commands(); len(seen) > 0 {
		t.Errorf("tools read the task's input: %q", seen)
	}
}
