package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// ComfyUI is a ComfyUI server for tests. It follows ComfyUI's server.py
// (github.com/comfyanonymous/ComfyUI: routes, status codes, answers) and
// execution.py (the websocket messages of a run, the /prompt validation
// errors, the queue and history): prompts are queued and run one at a time
// by a worker, their messages go to the socket of their client_id, and an
// output node "renders" by storing Clip, which /view serves.
//
// Fields above Mu are behaviour, set by the setup functions of NewComfyUI;
// those below are state, read under Mu.
type ComfyUI struct {
	Server *httptest.Server
	Clip   []byte // what an output node saves: a real video

	ErrorAt  string                      // node that raises during execution
	HoldAt   string                      // node that runs until it is interrupted
	DropWSAt int                         // close the client's socket after this many progress messages
	Forget   bool                        // with DropWSAt: forget the prompt too, as a restarted server does
	Legacy   bool                        // an older server: own prompt ids, global interrupt, no status in history, no execution_success
	View     func(w http.ResponseWriter) // answers /view instead; set under Mu once serving
	Stats    string                      // /system_stats answer
	// Gate, when set, holds a sampler (a node with steps) halfway through
	// its steps until Gate is closed, the prompt is interrupted or the
	// server closes.
	Gate chan struct{}

	Logs LogBuffer // for the logger of the runner a test makes

	Mu         sync.Mutex
	sockets    map[string]*websocket.Conn
	Uploads    map[string][]byte
	Overwrite  []string
	Queue      []*ComfyPrompt
	Running    *ComfyPrompt
	Paused     bool
	history    map[string]map[string]any
	files      map[string][]byte // "type/subfolder/filename" → bytes
	Interrupts []string          // prompt_id of each /interrupt ("" = global)
	Deleted    []string
	Views      []string
	All        []*ComfyPrompt // every prompt queued
	At         string         // the node running now
	progressN  int
	wake       chan struct{}
	closed     chan struct{}
	number     int
	closeOnce  sync.Once
}

// ComfyPrompt is a queued prompt.
type ComfyPrompt struct {
	ID, ClientID string
	number       int
	Nodes        map[string]ComfyNode
	interrupted  chan struct{}
}

// ComfyNode is a node of a prompt in ComfyUI's API format.
type ComfyNode struct {
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

// NewComfyUI starts a fake server that saves clip; setup sets its
// behaviour first. It stops with the test.
func NewComfyUI(t testing.TB, clip []byte, setup ...func(*ComfyUI)) *ComfyUI {
	t.Helper()
	f := &ComfyUI{Clip: clip, sockets: map[string]*websocket.Conn{}, Uploads: map[string][]byte{},
		history: map[string]map[string]any{}, files: map[string][]byte{}, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	f.Stats = `{"system":{"os":"posix","ram_total":67108864000,"ram_free":60000000000,"comfyui_version":"0.3.60"},
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
		io.WriteString(w, f.Stats)
	})
	f.Server = httptest.NewServer(mux)
	go f.worker()
	t.Cleanup(f.Close)
	return f
}

// URL is the server's base URL.
func (f *ComfyUI) URL() string { return f.Server.URL }

// Close stops the server as a crash would: open connections are cut.
// Websockets are hijacked connections, which httptest does not track:
// they are closed here, as the end of the process would close them. The
// test's end closes it too.
func (f *ComfyUI) Close() {
	f.closeOnce.Do(func() { close(f.closed) })
	f.Mu.Lock()
	for _, c := range f.sockets {
		c.CloseNow()
	}
	f.Mu.Unlock()
	f.Server.CloseClientConnections()
	f.Server.Close()
}

// send is server.py send_json to one client (sid) or, with "", to all.
func (f *ComfyUI) send(sid, typ string, data map[string]any) {
	msg, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	f.Mu.Lock()
	var conns []*websocket.Conn
	for id, c := range f.sockets {
		if sid == "" || id == sid {
			conns = append(conns, c)
		}
	}
	f.Mu.Unlock()
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Write(ctx, websocket.MessageText, msg) // send_socket_catch_exception: errors only logged
		cancel()
	}
}

func (f *ComfyUI) serveWS(w http.ResponseWriter, r *http.Request) {
	// server.py registers the socket right after the handshake, before
	// its event loop can serve the client's next request; the lock held
	// across Accept does the same here.
	f.Mu.Lock()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		f.Mu.Unlock()
		return
	}
	sid := r.URL.Query().Get("clientId")
	if sid == "" {
		sid = randomHex(16)
	}
	f.sockets[sid] = c
	remaining := len(f.Queue)
	f.Mu.Unlock()
	f.send(sid, "status", map[string]any{"status": map[string]any{"exec_info": map[string]any{"queue_remaining": remaining}}, "sid": sid})
	// Binary preview frames come too; a client must skip them.
	_ = c.Write(r.Context(), websocket.MessageBinary, []byte{0, 0, 0, 1, 0xff, 0xd8})
	for {
		if _, _, err := c.Read(r.Context()); err != nil {
			break
		}
	}
	f.Mu.Lock()
	if f.sockets[sid] == c {
		delete(f.sockets, sid)
	}
	f.Mu.Unlock()
}

func (f *ComfyUI) serveUpload(w http.ResponseWriter, r *http.Request) {
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
	f.Mu.Lock()
	f.Uploads[hdr.Filename] = b
	f.Overwrite = append(f.Overwrite, r.FormValue("overwrite"))
	f.Mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"name": hdr.Filename, "subfolder": "", "type": typ})
}

// servePrompt is post_prompt with a small validate_prompt.
func (f *ComfyUI) servePrompt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Prompt   map[string]ComfyNode `json:"prompt"`
		ClientID string               `json:"client_id"`
		PromptID string               `json:"prompt_id"`
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
	if id == "" || f.Legacy {
		id = randomUUID()
	}
	f.Mu.Lock()
	f.number++
	p := &ComfyPrompt{ID: id, ClientID: body.ClientID, number: f.number, Nodes: body.Prompt, interrupted: make(chan struct{})}
	f.Queue = append(f.Queue, p)
	f.All = append(f.All, p)
	remaining := len(f.Queue)
	f.Mu.Unlock()
	f.poke()
	f.send("", "status", map[string]any{"status": map[string]any{"exec_info": map[string]any{"queue_remaining": remaining}}})
	writeJSON(w, http.StatusOK, map[string]any{"prompt_id": id, "number": p.number, "node_errors": map[string]any{}})
}

// validate returns execution.py's node_errors for inputs the fake checks:
// integer inputs, model files and uploaded images.
func (f *ComfyUI) validate(prompt map[string]ComfyNode) map[string]any {
	errs := map[string]any{}
	add := func(id, class, typ, msg, input string, val any) {
		errs[id] = map[string]any{"class_type": class, "dependent_outputs": []string{}, "errors": []any{map[string]any{
			"type": typ, "message": msg, "details": fmt.Sprintf("%s: '%v'", input, val),
			"extra_info": map[string]any{"input_name": input, "received_value": val}}}}
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
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
			if _, ok := f.Uploads[fmt.Sprint(n.Inputs["image"])]; !ok {
				add(id, n.ClassType, "custom_validation_failed", "Custom validation failed for node", "image", n.Inputs["image"])
			}
		}
	}
	return errs
}

func (f *ComfyUI) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *ComfyUI) serveHistory(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	out := map[string]any{}
	if h, ok := f.history[r.PathValue("id")]; ok {
		out[r.PathValue("id")] = h
	}
	writeJSON(w, http.StatusOK, out)
}

func queueItem(p *ComfyPrompt) []any {
	return []any{p.number, p.ID, p.Nodes, map[string]any{"client_id": p.ClientID}, []string{}}
}

func (f *ComfyUI) serveQueue(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	running, pending := []any{}, []any{}
	if f.Running != nil {
		running = append(running, queueItem(f.Running))
	}
	for _, p := range f.Queue {
		pending = append(pending, queueItem(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue_running": running, "queue_pending": pending})
}

func (f *ComfyUI) serveQueueDelete(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Delete []string `json:"delete"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.Mu.Lock()
	for _, id := range body.Delete {
		f.Deleted = append(f.Deleted, id)
		f.Queue = slices.DeleteFunc(f.Queue, func(p *ComfyPrompt) bool { return p.ID == id })
	}
	f.Mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// serveInterrupt interrupts the running prompt: any (an older server, or
// no prompt_id), else only the one named.
func (f *ComfyUI) serveInterrupt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		PromptID string `json:"prompt_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.Mu.Lock()
	f.Interrupts = append(f.Interrupts, body.PromptID)
	if p := f.Running; p != nil && (f.Legacy || body.PromptID == "" || body.PromptID == p.ID) {
		select {
		case <-p.interrupted:
		default:
			close(p.interrupted)
		}
	}
	f.Mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (f *ComfyUI) serveView(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("type") + "/" + q.Get("subfolder") + "/" + q.Get("filename")
	f.Mu.Lock()
	f.Views = append(f.Views, key)
	b, ok := f.files[key]
	view := f.View
	f.Mu.Unlock()
	switch {
	case view != nil:
		view(w)
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(b)
	}
}
