package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeComfy is a ComfyUI server for tests. It follows ComfyUI's server.py
// (routes, status codes, answers) and execution.py (the websocket messages
// of a run, the /prompt validation errors, the queue and history): prompts
// are queued and run one at a time by a worker, their messages go to the
// socket of their client_id, and an output node "renders" by storing a
// real MP4 that /view serves.
type fakeComfy struct {
	t    *testing.T
	srv  *httptest.Server
	clip []byte

	// Behaviour, set before the first request.
	errorAt  string // node that raises during execution
	holdAt   string // node that runs until it is interrupted
	dropWSAt int    // close the client's socket after this many progress messages
	forget   bool   // with dropWSAt: forget the prompt too, as a restarted server does
	legacy   bool   // an older server: own prompt ids, global interrupt, no status in history, no execution_success
	view     func(w http.ResponseWriter)
	stats    string // /system_stats answer

	logs logBuffer // what runners made by runner() logged

	mu         sync.Mutex
	sockets    map[string]*websocket.Conn
	uploads    map[string][]byte
	overwrite  []string
	queue      []*fakePrompt
	running    *fakePrompt
	paused     bool
	history    map[string]map[string]any
	files      map[string][]byte // "type/subfolder/filename" → bytes
	interrupts []string          // prompt_id of each /interrupt ("" = global)
	deleted    []string
	views      []string
	all        []*fakePrompt // every prompt queued
	at         string        // the node running now
	progressN  int
	wake       chan struct{}
	closed     chan struct{}
	number     int
}

type fakePrompt struct {
	id, clientID string
	number       int
	nodes        map[string]fakeNode
	interrupted  chan struct{}
}

type fakeNode struct {
	ClassType string         `json:"class_type"`
	Inputs    map[string]any `json:"inputs"`
}

// fakeClasses are the node classes the fake knows, as ComfyUI's
// NODE_CLASS_MAPPINGS would.
var fakeClasses = []string{"UNETLoader", "CLIPTextEncode", "EmptyHunyuanLatentVideo", "KSampler", "VAEDecode",
	"LoadImage", "WanImageToVideo", "VHS_VideoCombine", "SaveVideo", "CreateVideo", "SaveImage", "LoadAudio",
	"CLIPLoader", "VAELoader", "ModelSamplingSD3", "Wan22ImageToVideoLatent"}

// fakeModels are the files UNETLoader's unet_name may name.
var fakeModels = []string{"wan2.2_t2v_5B_fp16.safetensors", "wan2.2_ti2v_5B_fp16.safetensors"}

// newFakeComfy starts a fake server; setup sets its behaviour first.
func newFakeComfy(t *testing.T, setup ...func(*fakeComfy)) *fakeComfy {
	t.Helper()
	f := &fakeComfy{t: t, clip: comfyTestClip(t), sockets: map[string]*websocket.Conn{}, uploads: map[string][]byte{},
		history: map[string]map[string]any{}, files: map[string][]byte{}, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	f.stats = `{"system":{"os":"posix","ram_total":67108864000,"ram_free":60000000000,"comfyui_version":"0.3.60"},
		"devices":[{"name":"cuda:0 NVIDIA H100 80GB HBM3 : cudaMallocAsync","type":"cuda","index":0,
		"vram_total":85045379072,"vram_free":84000000000,"torch_vram_total":0,"torch_vram_free":0}]}`
	for _, fn := range setup {
		fn(f)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", f.serveWS)
	mux.HandleFunc("POST /upload/image", f.serveUpload)
	mux.HandleFunc("POST /prompt", f.servePrompt)
	mux.HandleFunc("GET /history/{id}", f.serveHistory)
	mux.HandleFunc("GET /queue", f.serveQueue)
	mux.HandleFunc("POST /queue", f.serveQueueDelete)
	mux.HandleFunc("POST /interrupt", f.serveInterrupt)
	mux.HandleFunc("GET /view", f.serveView)
	mux.HandleFunc("GET /system_stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, f.stats)
	})
	f.srv = httptest.NewServer(mux)
	go f.worker()
	t.Cleanup(func() {
		close(f.closed)
		f.mu.Lock()
		for _, c := range f.sockets {
			c.CloseNow()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeComfy) runner(wf *ComfyWorkflow) *ComfyUIRunner {
	return &ComfyUIRunner{URL: f.srv.URL, Workflow: wf, PollInterval: 5 * time.Millisecond, Tools: testTools(),
		Logger: slog.New(slog.NewTextHandler(&f.logs, nil))}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// send is server.py send_json to one client (sid) or, with "", to all.
func (f *fakeComfy) send(sid, typ string, data map[string]any) {
	msg, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	f.mu.Lock()
	var conns []*websocket.Conn
	for id, c := range f.sockets {
		if sid == "" || id == sid {
			conns = append(conns, c)
		}
	}
	f.mu.Unlock()
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Write(ctx, websocket.MessageText, msg) // send_socket_catch_exception: errors only logged
		cancel()
	}
}

func (f *fakeComfy) serveWS(w http.ResponseWriter, r *http.Request) {
	// server.py registers the socket right after the handshake, before
	// its event loop can serve the client's next request; the lock held
	// across Accept does the same here.
	f.mu.Lock()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		f.mu.Unlock()
		return
	}
	sid := r.URL.Query().Get("clientId")
	if sid == "" {
		sid = randomHex(16)
	}
	f.sockets[sid] = c
	remaining := len(f.queue)
	f.mu.Unlock()
	f.send(sid, "status", map[string]any{"status": map[string]any{"exec_info": map[string]any{"queue_remaining": remaining}}, "sid": sid})
	// Binary preview frames come too; a client must skip them.
	_ = c.Write(r.Context(), websocket.MessageBinary, []byte{0, 0, 0, 1, 0xff, 0xd8})
	for {
		if _, _, err := c.Read(r.Context()); err != nil {
			break
		}
	}
	f.mu.Lock()
	if f.sockets[sid] == c {
		delete(f.sockets, sid)
	}
	f.mu.Unlock()
}

func (f *fakeComfy) serveUpload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	file, hdr, err := r.FormFile("image")
	if err != nil || hdr.Filename == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	defer file.Close()
	b, _ := io.ReadAll(file)
	typ := r.FormValue("type")
	if typ == "" {
		typ = "input"
	}
	f.mu.Lock()
	f.uploads[hdr.Filename] = b
	f.overwrite = append(f.overwrite, r.FormValue("overwrite"))
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"name": hdr.Filename, "subfolder": "", "type": typ})
}

// servePrompt is post_prompt with a small validate_prompt.
func (f *fakeComfy) servePrompt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Prompt   map[string]fakeNode `json:"prompt"`
		ClientID string              `json:"client_id"`
		PromptID string              `json:"prompt_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Prompt == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "no_prompt",
			"message": "No prompt provided", "details": "No prompt provided", "extra_info": map[string]any{}}, "node_errors": []any{}})
		return
	}
	for id, n := range body.Prompt {
		if !slices.Contains(fakeClasses, n.ClassType) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_prompt",
				"message": fmt.Sprintf("Cannot execute because node %s does not exist.", n.ClassType),
				"details": fmt.Sprintf("Node ID '#%s'", id), "extra_info": map[string]any{}}, "node_errors": map[string]any{}})
			return
		}
	}
	if nodeErrors := f.validate(body.Prompt); len(nodeErrors) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "prompt_outputs_failed_validation",
			"message": "Prompt outputs failed validation", "details": "", "extra_info": map[string]any{}}, "node_errors": nodeErrors})
		return
	}
	id := body.PromptID
	if id == "" || f.legacy {
		id = randomUUID()
	}
	f.mu.Lock()
	f.number++
	p := &fakePrompt{id: id, clientID: body.ClientID, number: f.number, nodes: body.Prompt, interrupted: make(chan struct{})}
	f.queue = append(f.queue, p)
	f.all = append(f.all, p)
	remaining := len(f.queue)
	f.mu.Unlock()
	f.poke()
	f.send("", "status", map[string]any{"status": map[string]any{"exec_info": map[string]any{"queue_remaining": remaining}}})
	writeJSON(w, http.StatusOK, map[string]any{"prompt_id": id, "number": p.number, "node_errors": map[string]any{}})
}

// validate returns execution.py's node_errors for inputs the fake checks:
// integer inputs, model files and uploaded images.
func (f *fakeComfy) validate(prompt map[string]fakeNode) map[string]any {
	errs := map[string]any{}
	add := func(id, class, typ, msg, input string, val any) {
		errs[id] = map[string]any{"class_type": class, "dependent_outputs": []string{}, "errors": []any{map[string]any{
			"type": typ, "message": msg, "details": fmt.Sprintf("%s: '%v'", input, val),
			"extra_info": map[string]any{"input_name": input, "received_value": val}}}}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, n := range prompt {
		for _, in := range []string{"seed", "steps", "width", "height", "length", "frame_rate"} {
			if v, ok := n.Inputs[in]; ok {
				if _, num := v.(float64); !num {
					add(id, n.ClassType, "invalid_input_type", "Failed to convert an input value to a INT value", in, v)
				}
			}
		}
		if n.ClassType == "UNETLoader" && !slices.Contains(fakeModels, fmt.Sprint(n.Inputs["unet_name"])) {
			add(id, n.ClassType, "value_not_in_list", "Value not in list", "unet_name", n.Inputs["unet_name"])
		}
		if n.ClassType == "LoadImage" {
			if _, ok := f.uploads[fmt.Sprint(n.Inputs["image"])]; !ok {
				add(id, n.ClassType, "custom_validation_failed", "Custom validation failed for node", "image", n.Inputs["image"])
			}
		}
	}
	return errs
}

func (f *fakeComfy) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeComfy) serveHistory(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]any{}
	if h, ok := f.history[r.PathValue("id")]; ok {
		out[r.PathValue("id")] = h
	}
	writeJSON(w, http.StatusOK, out)
}

func queueItem(p *fakePrompt) []any {
	return []any{p.number, p.id, p.nodes, map[string]any{"client_id": p.clientID}, []string{}}
}

func (f *fakeComfy) serveQueue(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	running, pending := []any{}, []any{}
	if f.running != nil {
		running = append(running, queueItem(f.running))
	}
	for _, p := range f.queue {
		pending = append(pending, queueItem(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue_running": running, "queue_pending": pending})
}

func (f *fakeComfy) serveQueueDelete(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Delete []string `json:"delete"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	for _, id := range body.Delete {
		f.deleted = append(f.deleted, id)
		f.queue = slices.DeleteFunc(f.queue, func(p *fakePrompt) bool { return p.id == id })
	}
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// serveInterrupt interrupts the running prompt: any (an older server, or
// no prompt_id), else only the one named.
func (f *fakeComfy) serveInterrupt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		PromptID string `json:"prompt_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.interrupts = append(f.interrupts, body.PromptID)
	if p := f.running; p != nil && (f.legacy || body.PromptID == "" || body.PromptID == p.id) {
		select {
		case <-p.interrupted:
		default:
			close(p.interrupted)
		}
	}
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (f *fakeComfy) serveView(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("type") + "/" + q.Get("subfolder") + "/" + q.Get("filename")
	f.mu.Lock()
	f.views = append(f.views, key)
	b, ok := f.files[key]
	f.mu.Unlock()
	switch {
	case f.view != nil:
		f.view(w)
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(b)
	}
}
