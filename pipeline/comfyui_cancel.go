package pipeline

import (
	"context"
	"encoding/json"
	"net/http"
)

// cancelPrompt takes the prompt back after the render was cancelled:
// deleted from the queue while pending (POST /queue {"delete": [id]}),
// interrupted while running (POST /interrupt {"prompt_id": id}; an older
// server ignores the body and interrupts whatever runs, which is why the
// queue is read first). The prompt is found in GET /queue by its id or by
// our client id (its extra_data), so one queued by an older server, which
// chose its own id, is found even when the render was cancelled before
// /prompt answered. A prompt that moves from pending to running in
// between is seen on the next look. Failures are logged: the render has
// already ended.
func (r *ComfyUIRunner) cancelPrompt(id, clientID string) {
	ctx, cancel := context.WithTimeout(context.Background(), comfyControlTimeout)
	defer cancel()
	for range 3 {
		q, err := r.queue(ctx)
		if err != nil {
			r.logger().Warn("comfyui cancel: cannot read the queue", "url", RedactURL(r.URL), "prompt_id", id, "err", err)
			return
		}
		running, pending := q.find(id, clientID)
		switch {
		case running != "":
			err = r.postJSON(ctx, "/interrupt", map[string]any{"prompt_id": running})
		case pending != "":
			err = r.postJSON(ctx, "/queue", map[string]any{"delete": []string{pending}})
		default:
			return
		}
		if err != nil {
			r.logger().Warn("comfyui cancel failed", "url", RedactURL(r.URL), "prompt_id", id, "err", err)
			return
		}
		if running != "" {
			return
		}
	}
}

// comfyQueue is GET /queue: {"queue_running": [...], "queue_pending":
// [...]}, each item [number, prompt_id, prompt, extra_data, outputs]
// (execution.py PromptQueue; extra_data holds the client_id).
type comfyQueue struct {
	Running []json.RawMessage `json:"queue_running"`
	Pending []json.RawMessage `json:"queue_pending"`
}

func (r *ComfyUIRunner) queue(ctx context.Context) (comfyQueue, error) {
	var q comfyQueue
	err := r.call(ctx, http.MethodGet, "/queue", "", nil, &q)
	return q, err
}

// find returns the id of the running and of the pending prompt that has
// prompt id id or, with clientID not "", that client id.
func (q comfyQueue) find(id, clientID string) (running, pending string) {
	match := func(items []json.RawMessage) string {
		for _, it := range items {
			var fields []json.RawMessage
			if json.Unmarshal(it, &fields) != nil || len(fields) < 2 {
				continue
			}
			var pid string
			var extra struct {
				ClientID string `json:"client_id"`
			}
			if json.Unmarshal(fields[1], &pid) != nil {
				continue
			}
			if len(fields) > 3 {
				_ = json.Unmarshal(fields[3], &extra)
			}
			if pid == id || clientID != "" && extra.ClientID == clientID {
				return pid
			}
		}
		return ""
	}
	return match(q.Running), match(q.Pending)
}
