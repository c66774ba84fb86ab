package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// worker is the prompt worker: one prompt at a time, in queue order.
func (f *fakeComfy) worker() {
	for {
		f.mu.Lock()
		var p *fakePrompt
		if !f.paused && len(f.queue) > 0 {
			p, f.queue = f.queue[0], f.queue[1:]
			f.running = p
		}
		f.mu.Unlock()
		if p == nil {
			select {
			case <-f.wake:
				continue
			case <-f.closed:
				return
			}
		}
		f.execute(p)
		f.mu.Lock()
		f.running = nil
		f.mu.Unlock()
	}
}

// order is the nodes in an order where each comes after its inputs
// (links are [node id, output index]).
func (p *fakePrompt) order() []string {
	var out []string
	seen := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		for _, in := range sortedKeys(p.nodes[id].Inputs) {
			if link, ok := p.nodes[id].Inputs[in].([]any); ok && len(link) == 2 {
				if from, ok := link[0].(string); ok {
					visit(from)
				}
			}
		}
		out = append(out, id)
	}
	ids := sortedKeys(p.nodes)
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
	for _, id := range ids {
		visit(id)
	}
	return out
}

// execute runs a prompt as execution.py's PromptExecutor reports it.
func (f *fakeComfy) execute(p *fakePrompt) {
	now := func() int64 { return time.Now().UnixMilli() }
	var messages [][]any
	emit := func(typ string, data map[string]any) {
		data["prompt_id"] = p.id
		if typ != "executing" && typ != "progress" && typ != "executed" {
			messages = append(messages, []any{typ, data})
		}
		f.send(p.clientID, typ, data)
	}
	finish := func(status string, outputs map[string]any) {
		entry := map[string]any{"prompt": queueItem(p), "outputs": outputs}
		if !f.legacy {
			entry["status"] = map[string]any{"status_str": status, "completed": status == "success", "messages": messages}
			entry["meta"] = map[string]any{}
		}
		f.mu.Lock()
		f.history[p.id] = entry
		f.mu.Unlock()
	}
	emit("execution_start", map[string]any{"timestamp": now()})
	emit("execution_cached", map[string]any{"nodes": []string{}, "timestamp": now()})
	outputs := map[string]any{}
	var executed []string
	for _, id := range p.order() {
		n := p.nodes[id]
		f.mu.Lock()
		f.at = id
		f.mu.Unlock()
		emit("executing", map[string]any{"node": id, "display_node": id})
		switch id {
		case f.holdAt:
			select {
			case <-p.interrupted:
			case <-f.closed:
				return
			}
			emit("execution_interrupted", map[string]any{"node_id": id, "node_type": n.ClassType, "executed": executed, "timestamp": now()})
			finish("error", outputs)
			return
		case f.errorAt:
			emit("execution_error", map[string]any{"node_id": id, "node_type": n.ClassType, "executed": executed,
				"exception_message": "CUDA out of memory. Tried to allocate 20.00 GiB", "exception_type": "torch.OutOfMemoryError",
				"traceback": []string{"  File \"execution.py\", line 1\n"}, "current_inputs": map[string]any{}, "current_outputs": map[string]any{},
				"timestamp": now()})
			finish("error", outputs)
			return
		}
		if steps, ok := n.Inputs["steps"].(float64); ok {
			for i := 1; i <= int(steps); i++ {
				emit("progress", map[string]any{"value": i, "max": int(steps), "node": id})
				if f.dropped() {
					return
				}
			}
		}
		if out := f.save(p, n); out != nil {
			outputs[id] = out
			emit("executed", map[string]any{"node": id, "display_node": id, "output": out})
		}
		executed = append(executed, id)
	}
	if !f.legacy {
		emit("execution_success", map[string]any{"timestamp": now()})
	}
	// main.py prompt_worker: execute() sent execution_success; task_done
	// writes the history; then "executing" with a null node.
	finish("success", outputs)
	emit("executing", map[string]any{"node": nil})
}

// dropped counts a progress message and, at dropWSAt, closes every
// socket; it reports whether the server also forgot the prompt (and so
// stops running it).
func (f *fakeComfy) dropped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.progressN++
	if f.dropWSAt == 0 || f.progressN != f.dropWSAt {
		return false
	}
	for sid, c := range f.sockets {
		c.CloseNow()
		delete(f.sockets, sid)
	}
	if f.forget {
		f.running = nil
		return true
	}
	return false
}

// save is what an output node writes and reports under "output".
func (f *fakeComfy) save(p *fakePrompt, n fakeNode) map[string]any {
	prefix, _ := n.Inputs["filename_prefix"].(string)
	if prefix == "" {
		prefix = "ComfyUI"
	}
	sub, base := "", prefix
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		sub, base = prefix[:i], prefix[i+1:]
	}
	file := func(ext string, b []byte) map[string]any {
		name := fmt.Sprintf("%s_%05d_%s", base, p.number, ext)
		f.mu.Lock()
		f.files["output/"+sub+"/"+name] = b
		f.mu.Unlock()
		return map[string]any{"filename": name, "subfolder": sub, "type": "output"}
	}
	switch n.ClassType {
	case "VHS_VideoCombine": // VideoHelperSuite: {"ui": {"gifs": [...]}}
		g := file(".mp4", f.clip)
		g["format"], g["frame_rate"] = "video/h264-mp4", n.Inputs["frame_rate"]
		return map[string]any{"gifs": []any{g}}
	case "SaveVideo": // comfy_extras/nodes_video.py: ui.PreviewVideo
		return map[string]any{"images": []any{file(".mp4", f.clip)}, "animated": []bool{true}}
	case "SaveImage":
		return map[string]any{"images": []any{file(".png", []byte("\x89PNG\r\n\x1a\n"))}}
	}
	return nil
}

// comfyClip is made once for all the tests.
var comfyClip struct {
	once sync.Once
	b    []byte
	err  error
}

// comfyTestClip is a small real MP4.
func comfyTestClip(t *testing.T) []byte {
	t.Helper()
	requireTools(t, "ffmpeg", "ffprobe")
	comfyClip.once.Do(func() {
		dir, err := os.MkdirTemp("", "comfyclip")
		if err != nil {
			comfyClip.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "clip.mp4")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, comfyClip.err = (OSExecutor{}).Run(ctx, Command{Name: "ffmpeg", Args: []string{"-v", "error", "-f", "lavfi", "-i",
			"testsrc=s=64x48:r=8:d=1", "-c:v", "mpeg4", "-pix_fmt", "yuv420p", out}}); comfyClip.err == nil {
			comfyClip.b, comfyClip.err = os.ReadFile(out)
		}
	})
	if comfyClip.err != nil {
		t.Fatal(comfyClip.err)
	}
	return comfyClip.b
}

// logBuffer collects a runner's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
