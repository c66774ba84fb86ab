package main

import (
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
)

// modelServer is a stand-in model server speaking the external runner
// protocol over HTTP: it renders each request with ffmpeg (testsrc2 at the
// asked size, frame rate and length), streams progress, then the clip.
type modelServer struct {
	t   *testing.T
	dir string
	srv *httptest.Server

	mu    sync.Mutex
	calls []modelCall
}

type modelCall struct {
	req   pipeline.ExternalRequest
	image image.Config // of image-0, when there is one
}

func startModelServer(t *testing.T, dir string) *modelServer {
	m := &modelServer{t: t, dir: dir}
	m.srv = httptest.NewServer(http.HandlerFunc(m.render))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *modelServer) render(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Vidfarm-Protocol") != pipeline.ExternalProtocol || r.ParseMultipartForm(32<<20) != nil {
		http.Error(w, "not a vidfarm.render.v1 request", http.StatusBadRequest)
		return
	}
	var c modelCall
	if err := json.Unmarshal([]byte(r.FormValue("request")), &c.req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if fhs := r.MultipartForm.File["image-0"]; len(fhs) > 0 {
		f, err := fhs[0].Open()
		if err == nil {
			c.image, _, err = image.DecodeConfig(f)
			f.Close()
		}
		if err != nil {
			http.Error(w, "image-0: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	m.mu.Lock()
	m.calls = append(m.calls, c)
	out := filepath.Join(m.dir, fmt.Sprintf("model-clip-%d.mp4", len(m.calls)))
	m.mu.Unlock()

	fmt.Fprint(w, "loading weights\nprogress 5\n")
	w.(http.Flusher).Flush()
	q := c.req
	src := fmt.Sprintf("testsrc2=s=%dx%d:r=%d:d=%s", q.Width, q.Height, q.FPS, strconv.FormatFloat(q.DurationSeconds, 'f', -1, 64))
	cmd := exec.CommandContext(r.Context(), "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src,
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(w, "error ffmpeg: %v: %s\n", err, msg)
		return
	}
	clip, err := os.ReadFile(out)
	if err != nil {
		fmt.Fprintf(w, "error %v\n", err)
		return
	}
	fmt.Fprintf(w, "progress 90\nclip %d\n", len(clip))
	_, _ = w.Write(clip)
}

func (m *modelServer) received() []modelCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelCall(nil), m.calls...)
}

// TestE2EHTTPRunner: an agent whose model renders through a model server's
// URL (--runner MODEL=URL) completes an image_to_video video with the
// server's clip; the server got the request, the frame size and the image.
func TestE2EHTTPRunner(t *testing.T) {
	f := newE2EFarm(t, 100)
	ms := startModelServer(t, f.dir)
	ag := f.startAgent("agent-http", "--runner", e2eModel+"="+ms.srv.URL+"/render", "--metrics-listen", "127.0.0.1:0")

	v := f.createVideo(manualBody("a lighthouse in the rain", fmt.Sprintf(`,"image_url":%q`, f.imageURL(2))))
	id := v["id"].(string)
	v = f.waitStatus(id, "completed", 90*time.Second)
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "http-runner.mp4"), 5, fw, fh, false)

	calls := ms.received()
	if len(calls) != 1 {
		t.Fatalf("the model server got %d requests, want 1", len(calls))
	}
	c := calls[0]
	q := c.req
	if q.Model != e2eModel || q.Operation != pipeline.ImageToVideo || q.Prompt != "a lighthouse in the rain" ||
		q.Width != fw || q.Height != fh || q.DurationSeconds != 5 || q.OutputPath != "" ||
		len(q.InputImages) != 1 || q.InputImages[0] != "image-0" {
		t.Errorf("request %+v", q)
	}
	if c.image.Width == 0 || c.image.Height == 0 {
		t.Errorf("image-0 did not decode: %+v", c.image)
	}

	// The agent's metrics count the render and the finalize it ran.
	served := findLogs(ag.proc, "serving metrics")
	if len(served) == 0 {
		t.Fatal("the agent did not log its metrics address")
	}
	url := served[0]["url"].(string)
	want := []string{
		`vidfarm_agent_tasks_total{kind="render",outcome="completed"} 1`,
		`vidfarm_agent_tasks_total{kind="finalize",outcome="completed"} 1`,
		`vidfarm_agent_registered 1`,
		`vidfarm_agent_tasks_running{kind="render"} 0`,
	}
	// The counters move just after the report the video waited for.
	eventually(t, 10*time.Second, "the agent's metrics to count both tasks", func() bool {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, line := range want {
			if !strings.Contains(string(body), line+"\n") {
				return false
			}
		}
		return true
	})
}
