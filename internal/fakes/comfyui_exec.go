package fakes

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// worker is the prompt worker: one prompt at a time, in queue order.
func (f *ComfyUI) worker() {
	for {
		f.Mu.Lock()
		var p *ComfyPrompt
		if !f.Paused && len(f.Queue) > 0 {
			p, f.Queue = f.Queue[0], f.Queue[1:]
			f.Running = p
		}
		f.Mu.Unlock()
		if p == nil {
			select {
			case <-f.wake:
				continue
			case <-f.closed:
				return
			}
		}
		f.execute(p)
		f.Mu.Lock()
		f.Running = nil
		f.Mu.Unlock()
	}
}

// order is the nodes in an order where each comes after its inputs
// (links are [node id, output index]).
func (p *ComfyPrompt) order() []string {
	var out []string
	seen := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		for _, in := range sortedKeys(p.Nodes[id].Inputs) {
			if link, ok := p.Nodes[id].Inputs[in].([]any); ok && len(link) == 2 {
				if from, ok := link[0].(string); ok {
					visit(from)
				}
			}
		}
		out = append(out, id)
	}
	ids := sortedKeys(p.Nodes)
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
	for _, id := range ids {
		visit(id)
	}
	return out
}

// execute runs a prompt as execution.py's PromptExecutor reports it.
func (f *ComfyUI) execute(p *ComfyPrompt) {
	now := func() int64 { return time.Now().UnixMilli() }
	var messages [][]any
	emit := func(typ string, data map[string]any) {
		data["prompt_id"] = p.ID
		if typ != "executing" && typ != "progress" && typ != "executed" {
			messages = append(messages, []any{typ, data})
		}
		f.send(p.ClientID, typ, data)
	}
	finish := func(status string, outputs map[string]any) {
		entry := map[string]any{"prompt": queueItem(p), "outputs": outputs}
		if !f.Legacy {
			entry["status"] = map[string]any{"status_str": status, "completed": status == "success", "messages": messages}
			entry["meta"] = map[string]any{}
		}
		f.Mu.Lock()
		f.history[p.ID] = entry
		f.Mu.Unlock()
	}
	emit("execution_start", map[string]any{"timestamp": now()})
	emit("execution_cached", map[string]any{"nodes": []string{}, "timestamp": now()})
	outputs := map[string]any{}
	var executed []string
	for _, id := range p.order() {
		n := p.Nodes[id]
		f.Mu.Lock()
		f.At = id
		f.Mu.Unlock()
		emit("executing", map[string]any{"node": id, "display_node": id})
		switch id {
		case f.HoldAt:
			select {
			case <-p.interrupted:
			case <-f.closed:
				return
			}
			emit("execution_interrupted", map[string]any{"node_id": id, "node_type": n.ClassType, "executed": executed, "timestamp": now()})
			finish("error", outputs)
			return
		case f.ErrorAt:
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
				if i == int(steps)/2 && f.Gate != nil {
					select {
					case <-f.Gate:
					case <-p.interrupted:
						emit("execution_interrupted", map[string]any{"node_id": id, "node_type": n.ClassType, "executed": executed, "timestamp": now()})
						finish("error", outputs)
						return
					case <-f.closed:
						return
					}
				}
			}
		}
		if out := f.save(p, n); out != nil {
			outputs[id] = out
			emit("executed", map[string]any{"node": id, "display_node": id, "output": out})
		}
		executed = append(executed, id)
	}
	if !f.Legacy {
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
func (f *ComfyUI) dropped() bool {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.progressN++
	if f.DropWSAt == 0 || f.progressN != f.DropWSAt {
		return false
	}
	for sid, c := range f.sockets {
		c.CloseNow()
		delete(f.sockets, sid)
	}
	if f.Forget {
		f.Running = nil
		return true
	}
	return false
}

// save is what an output node writes and reports under "output".
func (f *ComfyUI) save(p *ComfyPrompt, n ComfyNode) map[string]any {
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
		f.Mu.Lock()
		f.files["output/"+sub+"/"+name] = b
		f.Mu.Unlock()
		return map[string]any{"filename": name, "subfolder": sub, "type": "output"}
	}
	switch n.ClassType {
	case "VHS_VideoCombine": // VideoHelperSuite: {"ui": {"gifs": [...]}}
		g := file(".mp4", f.Clip)
		g["format"], g["frame_rate"] = "video/h264-mp4", n.Inputs["frame_rate"]
		return map[string]any{"gifs": []any{g}}
	case "SaveVideo": // comfy_extras/nodes_video.py: ui.PreviewVideo
		return map[string]any{"images": []any{file(".mp4", f.Clip)}, "animated": []bool{true}}
	case "SaveImage":
		return map[string]any{"images": []any{file(".png", []byte("\x89PNG\r\n\x1a\n"))}}
	}
	return nil
}

// LogBuffer collects a runner's log lines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
