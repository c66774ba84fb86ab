package pipeline

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeCog is a Cog container's HTTP API as github.com/replicate/cog
// docs/http.md describes it: GET /health-check, GET /openapi.json, PUT
// /predictions/{id} (idempotent: an id in flight is joined, not started
// again), synchronous or as a text/event-stream of start, log, output and
// completed events (406 for a model without @cog.streaming), and POST
// /predictions/{id}/cancel (200, or 404 for an unknown id). Predictions
// wait on a gate when one is set, so a test decides when they finish.
type fakeCog struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	health    string   // GET /health-check status
	inputs    []string // the Input schema's properties
	noStream  bool     // the model lacks @cog.streaming: SSE requests get 406
	logs      []string // log lines each prediction writes
	output    func(base string) any
	failWith  string        // non-empty: predictions fail with this error
	gate      chan struct{} // nil: predictions finish at once
	cutFirst  bool          // drop the first stream connection after the logs
	loseFirst bool          // drop the first PUT's connection once its prediction started
	legacy    bool          // a Cog without event streams: Accept is ignored, answers are synchronous
	clip      []byte        // served at GET /files/clip.mp4
	preds     map[string]*fakePrediction
	created   int
	cancelled []string
	inputsGot []map[string]any
}

type fakePrediction struct {
	events  []fakeEvent
	changed chan struct{} // closed and replaced on every new event
	done    bool
	cancel  chan struct{}
}

type fakeEvent struct{ name, data string }

func newFakeCog(t *testing.T) *fakeCog {
	f := &fakeCog{t: t, health: "READY", inputs: []string{"prompt", "seed", "width", "height", "num_frames", "image"},
		clip: []byte("\x00\x00\x00\x18ftypmp42 not really a clip"), preds: map[string]*fakePrediction{}}
	f.output = func(base string) any { return base + "/files/clip.mp4" }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health-check", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		body := map[string]any{"status": f.health, "setup": map[string]any{"status": "succeeded", "logs": ""}}
		if f.health == "SETUP_FAILED" {
			body["setup"] = map[string]any{"status": "failed", "logs": "CUDA out of memory while loading weights"}
		}
		cogJSON(w, http.StatusOK, body)
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		props := map[string]any{}
		for _, in := range f.inputs {
			props[in] = map[string]any{"type": "string", "title": in}
		}
		cogJSON(w, http.StatusOK, map[string]any{"openapi": "3.0.2",
			"components": map[string]any{"schemas": map[string]any{"Input": map[string]any{"type": "object", "properties": props}}}})
	})
	mux.HandleFunc("PUT /predictions/{id}", f.put)
	mux.HandleFunc("POST /predictions/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		p, ok := f.preds[r.PathValue("id")]
		if !ok {
			cogJSON(w, http.StatusNotFound, map[string]any{})
			return
		}
		f.cancelled = append(f.cancelled, r.PathValue("id"))
		if !p.done {
			close(p.cancel)
			p.done = true
		}
		cogJSON(w, http.StatusOK, map[string]any{})
	})
	mux.HandleFunc("GET /files/clip.mp4", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(f.clip)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func cogJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeCog) put(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body struct {
		ID    string         `json:"id"`
		Input map[string]any `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		cogJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": err.Error()})
		return
	}
	if body.ID != "" && body.ID != id {
		cogJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{
			"loc": []string{"body", "id"}, "msg": "prediction ID must match the ID supplied in the URL", "type": "value_error"}}})
		return
	}
	f.mu.Lock()
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream") && !f.legacy
	if sse && f.noStream {
		f.mu.Unlock()
		cogJSON(w, http.StatusNotAcceptable, map[string]any{"error": "This model does not support streaming responses. Add @cog.streaming to predict() to enable SSE."})
		return
	}
	p, ok := f.preds[id]
	if !ok && f.running() > 0 {
		f.mu.Unlock()
		// One slot, as Cog by default: docs/http.md, "Generating unique prediction IDs".
		cogJSON(w, http.StatusConflict, map[string]any{"error": "Already running a prediction"})
		return
	}
	if !ok {
		p = &fakePrediction{changed: make(chan struct{}), cancel: make(chan struct{})}
		f.preds[id] = p
		f.created++
		f.inputsGot = append(f.inputsGot, body.Input)
		go f.run(id, p)
	}
	first := !ok
	lose := first && f.loseFirst
	f.mu.Unlock()
	if lose {
		panic(http.ErrAbortHandler) // the answer is lost; the prediction runs on
	}
	if !sse {
		f.waitSync(w, r, p)
		return
	}
	f.stream(w, r, p, first && f.cutFirst)
}

// run is the prediction: start, the logs, then (after the gate or a
// cancel) completed.
func (f *fakeCog) run(id string, p *fakePrediction) {
	f.emit(p, "start", map[string]any{"id": id, "status": "processing"})
	f.mu.Lock()
	logs, gate := f.logs, f.gate
	f.mu.Unlock()
	for _, l := range logs {
		f.emit(p, "log", map[string]any{"source": "stderr", "data": l})
	}
	if gate != nil {
		select {
		case <-gate:
		case <-p.cancel:
			f.emit(p, "completed", map[string]any{"id": id, "status": "canceled", "output": nil, "error": nil})
			return
		}
	}
	f.mu.Lock()
	fail, out := f.failWith, f.output(f.srv.URL)
	f.mu.Unlock()
	final := map[string]any{"id": id, "status": "succeeded", "output": out, "error": nil, "logs": strings.Join(logs, "\n"),
		"metrics": map[string]any{"predict_time": 0.5}}
	if fail != "" {
		final["status"], final["output"], final["error"] = "failed", nil, fail
	}
	f.emit(p, "completed", final)
}

func (f *fakeCog) emit(p *fakePrediction, name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Errorf("fake cog: %v", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p.events = append(p.events, fakeEvent{name, string(b)})
	if name == "completed" {
		p.done = true
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// stream serves the prediction's events from the first (the replay), until
// completed; cut drops the connection once the logs are out.
func (f *fakeCog) stream(w http.ResponseWriter, r *http.Request, p *fakePrediction, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	sent := 0
	for {
		f.mu.Lock()
		evs, changed, nlogs := p.events[sent:], p.changed, len(f.logs)
		f.mu.Unlock()
		for _, ev := range evs {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data)
			sent++
			if ev.name == "completed" {
				fl.Flush()
				return
			}
		}
		fl.Flush()
		if cut && sent >= 1+nlogs {
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// waitSync answers a synchronous prediction with its final object.
func (f *fakeCog) waitSync(w http.ResponseWriter, r *http.Request, p *fakePrediction) {
	for {
		f.mu.Lock()
		var last fakeEvent
		if n := len(p.events); n > 0 {
			last = p.events[n-1]
		}
		changed := p.changed
		f.mu.Unlock()
		if last.name == "completed" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(last.data))
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// running counts the predictions not yet completed; f.mu is held.
func (f *fakeCog) running() int {
	n := 0
	for _, p := range f.preds {
		if !p.done {
			n++
		}
	}
	return n
}

func (f *fakeCog) counts() (created int, cancelled []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created, append([]string(nil), f.cancelled...)
}
