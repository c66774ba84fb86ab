package agent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// fakeCog is a Cog container as github.com/replicate/cog docs/http.md
// describes its HTTP API, reduced to what the agent's tests need: GET
// /health-check with a status the test sets (so it can flap), GET
// /openapi.json with an Input schema, PUT /predictions/{id} answered as a
// text/event-stream (start, a log line with progress, then completed with
// a data URI output once the test opens the gate), POST
// /predictions/{id}/cancel. The pipeline package's tests cover the rest of
// the API.
type fakeCog struct {
	srv  *httptest.Server
	clip []byte

	mu        sync.Mutex
	health    string
	gate      chan struct{} // closed: predictions finish
	predicted []string      // prediction ids, in order
	cancelled []string
	cancels   map[string]chan struct{}
}

// newAgentFakeCog starts a container whose predictions return a real
// 1280x720 clip of 4 s (what the tests' renders ask for).
func newAgentFakeCog(t *testing.T, health string) *fakeCog {
	f := &fakeCog{health: health, clip: testClip(t, 1280, 720, 4), gate: make(chan struct{}), cancels: map[string]chan struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health-check", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSONBody(w, http.StatusOK, map[string]any{"status": f.health, "setup": map[string]any{"status": "succeeded"}})
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONBody(w, http.StatusOK, map[string]any{"components": map[string]any{"schemas": map[string]any{
			"Input": map[string]any{"type": "object", "properties": map[string]any{"prompt": map[string]any{"type": "string"}}}}}})
	})
	mux.HandleFunc("PUT /predictions/{id}", f.predict)
	mux.HandleFunc("POST /predictions/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		ch, ok := f.cancels[r.PathValue("id")]
		if !ok {
			writeJSONBody(w, http.StatusNotFound, map[string]any{})
			return
		}
		f.cancelled = append(f.cancelled, r.PathValue("id"))
		delete(f.cancels, r.PathValue("id"))
		close(ch)
		writeJSONBody(w, http.StatusOK, map[string]any{})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCog) setHealth(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = s
}

func (f *fakeCog) record() (predicted, cancelled []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.predicted...), append([]string(nil), f.cancelled...)
}

func (f *fakeCog) predict(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body struct {
		Input map[string]any `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Input["prompt"] == nil {
		writeJSONBody(w, http.StatusUnprocessableEntity, map[string]any{"detail": "input.prompt missing"})
		return
	}
	cancel := make(chan struct{})
	f.mu.Lock()
	f.predicted = append(f.predicted, id)
	f.cancels[id] = cancel
	gate := f.gate
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	event("start", map[string]any{"id": id, "status": "processing"})
	event("log", map[string]any{"source": "stderr", "data": " 50%|█████     | 10/20 [00:05<00:05]\r"})
	final := map[string]any{"id": id, "status": "succeeded", "output": "data:video/mp4;base64," + base64.StdEncoding.EncodeToString(f.clip)}
	select {
	case <-gate:
	case <-cancel:
		final = map[string]any{"id": id, "status": "canceled"}
	case <-r.Context().Done():
		return
	}
	event("completed", final)
}

// testClip is an H.264 MP4 of w x h pixels and the given seconds.
func testClip(t *testing.T, w, h int, seconds float64) []byte {
	t.Helper()
	requireTools(t, "ffmpeg", "ffprobe")
	path := filepath.Join(t.TempDir(), "clip.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
		fmt.Sprintf("testsrc2=s=%dx%d:r=24:d=%g", w, h, seconds), "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
