package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Cog is a Cog container's HTTP API as github.com/replicate/cog
// docs/http.md describes it: GET /health-check, GET /openapi.json, PUT
// /predictions/{id} (idempotent: an id in flight is joined, not started
// again), synchronous or as a text/event-stream of start, log, output and
// completed events (406 for a model without @cog.streaming), and POST
// /predictions/{id}/cancel (200, or 404 for an unknown id). Predictions
// wait on Gate when one is set, so a test decides when they finish. One
// prediction runs at a time, as Cog's default: another id is 409.
//
// Set the exported fields before the first request, or under Mu.
type Cog struct {
	t      testing.TB
	Server *httptest.Server

	Mu         sync.Mutex
	Health     string   // GET /health-check status
	InputNames []string // the Input schema's properties
	NoStream   bool     // the model lacks @cog.streaming: SSE requests get 406
	Logs       []string // log lines each prediction writes
	// Output is a succeeded prediction's output, given the server's base
	// URL (default: the URL of Clip, served at /files/clip.mp4).
	Output func(base string) any
	// Render, when set, makes the output from the prediction's input
	// instead (a data URI, a URL); an error fails the prediction with it.
	Render    func(input map[string]any) (any, error)
	FailWith  string        // non-empty: predictions fail with this error
	Gate      chan struct{} // nil: predictions finish at once
	CutFirst  bool          // drop the first stream connection after the logs
	LoseFirst bool          // drop the first PUT's connection once its prediction started
	Legacy    bool          // a Cog without event streams: Accept is ignored, answers are synchronous
	Clip      []byte        // served at GET /files/clip.mp4

	Created   int              // predictions created
	Cancelled []string         // prediction ids cancelled, in order
	Received  []map[string]any // each created prediction's input
	ids       []string
	preds     map[string]*cogPrediction
}

type cogPrediction struct {
	events  []cogEvent
	changed chan struct{} // closed and replaced on every new event
	done    bool
	cancel  chan struct{}
}

type cogEvent struct{ name, data string }

// NewCog starts a fake Cog container, READY, with the Input schema of a
// text-to-video model; setup sets its behaviour first. It stops with the
// test.
func NewCog(t testing.TB, setup ...func(*Cog)) *Cog {
	t.Helper()
	f := &Cog{t: t, Health: "READY", InputNames: []string{"prompt", "seed", "width", "height", "num_frames", "image"},
		Clip: []byte("\x00\x00\x00\x18ftypmp42 not really a clip"), preds: map[string]*cogPrediction{}}
	f.Output = func(base string) any { return base + "/files/clip.mp4" }
	for _, fn := range setup {
		fn(f)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health-check", func(w http.ResponseWriter, _ *http.Request) {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		body := map[string]any{"status": f.Health, "setup": map[string]any{"status": "succeeded", "logs": ""}}
		if f.Health == "SETUP_FAILED" {
			body["setup"] = map[string]any{"status": "failed", "logs": "CUDA out of memory while loading weights"}
		}
		writeJSON(w, http.StatusOK, body)
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		props := map[string]any{}
		for _, in := range f.InputNames {
			props[in] = map[string]any{"type": "string", "title": in}
		}
		writeJSON(w, http.StatusOK, map[string]any{"openapi": "3.0.2",
			"components": map[string]any{"schemas": map[string]any{"Input": map[string]any{"type": "object", "properties": props}}}})
	})
	mux.HandleFunc("PUT /predictions/{id}", f.put)
	mux.HandleFunc("POST /predictions/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		p, ok := f.preds[r.PathValue("id")]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{})
			return
		}
		f.Cancelled = append(f.Cancelled, r.PathValue("id"))
		if !p.done {
			close(p.cancel)
			p.done = true
		}
		writeJSON(w, http.StatusOK, map[string]any{})
	})
	mux.HandleFunc("GET /files/clip.mp4", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(f.Clip)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Server.Close)
	return f
}

// URL is the container's base URL.
func (f *Cog) URL() string { return f.Server.URL }

// SetHealth sets what GET /health-check says from now on.
func (f *Cog) SetHealth(s string) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Health = s
}

// Record is the prediction ids created and those cancelled, in order.
func (f *Cog) Record() (predicted, cancelled []string) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.ids), slices.Clone(f.Cancelled)
}

// Inputs are the inputs of the predictions created, in order.
func (f *Cog) Inputs() []map[string]any {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.Received)
}

func (f *Cog) put(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body struct {
		ID    string         `json:"id"`
		Input map[string]any `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": err.Error()})
		return
	}
	if body.ID != "" && body.ID != id {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{
			"loc": []string{"body", "id"}, "msg": "prediction ID must match the ID supplied in the URL", "type": "value_error"}}})
		return
	}
	f.Mu.Lock()
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream") && !f.Legacy
	if sse && f.NoStream {
		f.Mu.Unlock()
		writeJSON(w, http.StatusNotAcceptable, map[string]any{"error": "This model does not support streaming responses. Add @cog.streaming to predict() to enable SSE."})
		return
	}
	p, ok := f.preds[id]
	if !ok && f.running() > 0 {
		f.Mu.Unlock()
		// One slot, as Cog by default: docs/http.md, "Generating unique prediction IDs".
		writeJSON(w, http.StatusConflict, map[string]any{"error": "Already running a prediction"})
		return
	}
	if !ok {
		p = &cogPrediction{changed: make(chan struct{}), cancel: make(chan struct{})}
		f.preds[id] = p
		f.Created++
		f.ids = append(f.ids, id)
		f.Received = append(f.Received, body.Input)
		go f.run(id, p, body.Input)
	}
	first := !ok
	lose := first && f.LoseFirst
	f.Mu.Unlock()
	if lose {
		panic(http.ErrAbortHandler) // the answer is lost; the prediction runs on
	}
	if !sse {
		f.waitSync(w, r, p)
		return
	}
	f.stream(w, r, p, first && f.CutFirst)
}

// run is the prediction: start, the logs, then (after the gate or a
// cancel) completed.
func (f *Cog) run(id string, p *cogPrediction, input map[string]any) {
	f.emit(p, "start", map[string]any{"id": id, "status": "processing"})
	f.Mu.Lock()
	logs, gate := f.Logs, f.Gate
	f.Mu.Unlock()
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
	f.Mu.Lock()
	fail, out, render := f.FailWith, f.Output(f.Server.URL), f.Render
	f.Mu.Unlock()
	if render != nil {
		var err error
		if out, err = render(input); err != nil {
			fail = err.Error()
		}
	}
	final := map[string]any{"id": id, "status": "succeeded", "output": out, "error": nil, "logs": strings.Join(logs, "\n"),
		"metrics": map[string]any{"predict_time": 0.5}}
	if fail != "" {
		final["status"], final["output"], final["error"] = "failed", nil, fail
	}
	f.emit(p, "completed", final)
}

func (f *Cog) emit(p *cogPrediction, name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Errorf("fake cog: %v", err)
		return
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	p.events = append(p.events, cogEvent{name, string(b)})
	if name == "completed" {
		p.done = true
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// stream serves the prediction's events from the first (the replay), until
// completed; cut drops the connection once the logs are out.
func (f *Cog) stream(w http.ResponseWriter, r *http.Request, p *cogPrediction, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	sent := 0
	for {
		f.Mu.Lock()
		evs, changed, nlogs := p.events[sent:], p.changed, len(f.Logs)
		f.Mu.Unlock()
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
func (f *Cog) waitSync(w http.ResponseWriter, r *http.Request, p *cogPrediction) {
	for {
		f.Mu.Lock()
		var last cogEvent
		if n := len(p.events); n > 0 {
			last = p.events[n-1]
		}
		changed := p.changed
		f.Mu.Unlock()
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

// running counts the predictions not yet completed; f.Mu is held.
func (f *Cog) running() int {
	n := 0
	for _, p := range f.preds {
		if !p.done {
			n++
		}
	}
	return n
}

// Counts is how many predictions were created and which were cancelled.
func (f *Cog) Counts() (created int, cancelled []string) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.Created, append([]string(nil), f.Cancelled...)
}
