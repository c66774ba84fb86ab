package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// cogServer is a Cog container as github.com/replicate/cog docs/http.md
// describes its HTTP API: GET /health-check with a status the test sets,
// GET /openapi.json with the model's Input schema, PUT /predictions/{id}
// answered as a text/event-stream (start, a tqdm log line, completed with
// the clip as a data URI), POST /predictions/{id}/cancel. It renders with
// ffmpeg (testsrc2) at the asked width x height for num_frames at 24 fps.
type cogServer struct {
	t   *testing.T
	dir string
	srv *httptest.Server

	mu     sync.Mutex
	health string
	inputs []map[string]any
}

func startCogServer(t *testing.T, dir string) *cogServer {
	c := &cogServer{t: t, dir: dir, health: "READY"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health-check", func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":%q,"setup":{"status":"succeeded","logs":""}}`, c.health)
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"openapi":"3.0.2","components":{"schemas":{"Input":{"type":"object","properties":{`+
			`"prompt":{"type":"string"},"seed":{"type":"integer"},"width":{"type":"integer"},"height":{"type":"integer"},"num_frames":{"type":"integer"}}}}}}`)
	})
	mux.HandleFunc("PUT /predictions/{id}", c.predict)
	mux.HandleFunc("POST /predictions/{id}/cancel", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound) // predictions here finish before anyone cancels them
	})
	c.srv = httptest.NewServer(mux)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *cogServer) setHealth(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.health = s
}

func (c *cogServer) received() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.inputs...)
}

func (c *cogServer) predict(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Input map[string]any `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	num := func(k string) int { f, _ := body.Input[k].(float64); return int(f) }
	c.mu.Lock()
	c.inputs = append(c.inputs, body.Input)
	out := filepath.Join(c.dir, fmt.Sprintf("cog-%d.mp4", len(c.inputs)))
	c.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		w.(http.Flusher).Flush()
	}
	id := r.PathValue("id")
	event("start", map[string]any{"id": id, "status": "processing"})
	event("log", map[string]any{"source": "stderr", "data": " 50%|█████     | 25/50 [00:02<00:02]\r"})
	src := fmt.Sprintf("testsrc2=s=%dx%d:r=24:d=%g", num("width"), num("height"), float64(num("num_frames"))/24)
	msg, err := exec.CommandContext(r.Context(), "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src,
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", out).CombinedOutput()
	if err != nil {
		event("completed", map[string]any{"id": id, "status": "failed", "error": fmt.Sprintf("ffmpeg: %v: %s", err, msg)})
		return
	}
	clip, err := os.ReadFile(out)
	if err != nil {
		event("completed", map[string]any{"id": id, "status": "failed", "error": err.Error()})
		return
	}
	event("completed", map[string]any{"id": id, "status": "succeeded", "metrics": map[string]any{"predict_time": 1.2},
		"output": "data:video/mp4;base64," + base64.StdEncoding.EncodeToString(clip)})
}

// TestE2ECogRunner: an agent with a runners file renders a manual video
// through a Cog container; when the container's health check fails the
// node withdraws the model without registering again (a new video waits
// with no_node_supports_model) and when it recovers the model comes back
// and the video completes.
func TestE2ECogRunner(t *testing.T) {
	f := newE2EFarm(t, 100)
	cog := startCogServer(t, f.dir)
	runners := filepath.Join(f.dir, "runners.yaml")
	file := fmt.Sprintf(`version: 1
runners:
  - name: seedance
    kind: cog
    url: %s
    models: [%s]
    health_interval: 200ms
    inputs: {prompt: prompt, seed: seed, width: width, height: height, num_frames: num_frames}
`, cog.srv.URL, e2eModel)
	if err := os.WriteFile(runners, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	ag := f.startAgent("agent-cog", "--runners", runners)

	v := f.createVideo(manualBody("a lighthouse in the rain", ""))
	v = f.waitStatus(v["id"].(string), "completed", 90*time.Second)
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "cog.mp4"), 5, fw, fh, false)
	got := cog.received()
	if len(got) != 1 || got[0]["prompt"] != "a lighthouse in the rain" || got[0]["width"] != float64(fw) ||
		got[0]["height"] != float64(fh) || got[0]["num_frames"] != float64(5*24) {
		t.Fatalf("the container got %v", got)
	}

	cog.setHealth("SETUP_FAILED")
	eventually(t, 30*time.Second, "the agent to withdraw the model", func() bool {
		return len(findLogs(ag.proc, "advertised models updated")) >= 1
	})
	if n := len(findLogs(ag.proc, "registered")); n != 1 {
		t.Errorf("the agent registered %d times; a runner's change should update its models in place", n)
	}
	v = f.createVideo(manualBody("a second lighthouse", ""))
	id := v["id"].(string)
	f.waitVideo(id, 30*time.Second, "waiting for a node with the model", func(v map[string]any) bool {
		p, _ := v["progress"].(map[string]any)
		return p["reason"] == "no_node_supports_model"
	})
	cog.setHealth("READY")
	f.waitStatus(id, "completed", 90*time.Second)
	if n := len(cog.received()); n != 2 {
		t.Errorf("the container got %d predictions, want 2", n)
	}
}

// TestAgentRunnersFileMistakes: `vidfarm agent --runners` with a broken
// file exits 1 before it registers, listing every mistake with its line.
func TestAgentRunnersFileMistakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := filepath.Join(t.TempDir(), "runners.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
runners:
  - name: wan
    kind: cog
    url: http://127.0.0.1:5000
    models: [wan-2.2-a14b, wan-9]
    gpu_memory_gb: 0
    inputs: {prompt: prompt, strength: s}
  - name: wan
    kind: cog
    url: http://127.0.0.1:5001
    models: [wan-2.2-a14b]
    timeout: forever
    inputs: {prompt: prompt}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(vidfarmBinary(t), "agent", "--server", "http://127.0.0.1:1", "--token", "t", "--runners", file)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("vidfarm agent: %v, want exit status 1; output:\n%s", err, out)
	}
	for _, want := range []string{
		"runners file runners.yaml has 6 mistake(s):",
		`runners.yaml:6: runners[0].models[1]: "wan-9" is not a catalog model`,
		"runners.yaml:7: runners[0].gpu_memory_gb: must be > 0",
		"runners.yaml:8: runners[0].inputs.strength: not a request field",
		`runners.yaml:13: runners[1].timeout: "forever" is not a duration`,
		`runners.yaml:9: runners[1].name: "wan" is also the name of the runner at runners.yaml:3`,
		`runners.yaml:9: runners[1].models: model "wan-2.2-a14b" is also given to the runner at runners.yaml:3`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
