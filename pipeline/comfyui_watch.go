package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// maxComfyMessage bounds one websocket message; binary preview images are
// the largest.
const maxComfyMessage = 64 << 20

// maxComfyPollFailures is how many /history polls in a row may fail before
// the server is taken for gone.
const maxComfyPollFailures = 10

// comfyEvent is one JSON websocket message, {"type", "data"}
// (server.py send_json); the data fields are those execution.py and
// server.py send, several types sharing names.
type comfyEvent struct {
	Type string `json:"type"`
	Data struct {
		PromptID         string          `json:"prompt_id"`
		Node             json.RawMessage `json:"node"`  // executing (null: done), progress
		Nodes            []string        `json:"nodes"` // execution_cached
		Value            float64         `json:"value"` // progress
		Max              float64         `json:"max"`
		NodeID           string          `json:"node_id"` // execution_error, execution_interrupted
		NodeType         string          `json:"node_type"`
		ExceptionType    string          `json:"exception_type"`
		ExceptionMessage string          `json:"exception_message"`
	} `json:"data"`
}

// node is the message's "node": its id, or "" for null or absent.
func (e *comfyEvent) node() string {
	var s string
	if json.Unmarshal(e.Data.Node, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(e.Data.Node, &n) == nil {
		return n.String()
	}
	return ""
}

func (r *ComfyUIRunner) dialWS(ctx context.Context, clientID string) (*websocket.Conn, error) {
	u, err := r.wsURL(clientID)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, comfyControlTimeout)
	defer cancel()
	hc := r.client()
	if hc.Timeout != 0 {
		// The websocket lives as long as the render; the library refuses
		// a client with a timeout.
		c := *hc
		c.Timeout = 0
		hc = &c
	}
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: hc})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(maxComfyMessage)
	return conn, nil
}

// wait follows prompt id until it has finished, and returns its history
// entry: on the websocket while it lasts, then by polling /history (a
// websocket that drops mid-render is not a failed render: the prompt goes
// on on the server).
func (r *ComfyUIRunner) wait(ctx context.Context, ws *websocket.Conn, id string, prog *comfyProgress) (comfyHistory, error) {
	if ws != nil {
		done, err := r.follow(ctx, ws, id, prog)
		switch {
		case done && err == nil:
			// execution_success comes before the history entry is
			// written (main.py prompt_worker): wait for the entry.
			return r.poll(ctx, id)
		case done || ctx.Err() != nil:
			return comfyHistory{}, err
		}
		r.logger().Warn("comfyui websocket lost; following the prompt by polling /history", "url", RedactURL(r.URL), "prompt_id", id, "err", err)
	}
	return r.poll(ctx, id)
}

// follow reads the websocket until the prompt ends. done reports that it
// ended (err is then its outcome); otherwise err is why the websocket
// could not be read. The history is also looked at now and then (every
// ten poll intervals), because ComfyUI sends no message when someone else
// deletes the prompt from the queue, and drops messages it fails to send.
func (r *ComfyUIRunner) follow(ctx context.Context, ws *websocket.Conn, id string, prog *comfyProgress) (done bool, err error) {
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	events := make(chan comfyEvent)
	lost := make(chan error, 1)
	go func() {
		for {
			typ, data, err := ws.Read(rctx)
			if err != nil {
				lost <- err
				return
			}
			var ev comfyEvent
			if typ != websocket.MessageText || json.Unmarshal(data, &ev) != nil || ev.Data.PromptID != id {
				continue // previews (binary), status broadcasts, other clients' prompts
			}
			select {
			case events <- ev:
			case <-rctx.Done():
				return
			}
		}
	}()
	check := time.NewTicker(10 * r.pollInterval())
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case err := <-lost:
			return false, err
		case <-check.C:
			// A failed look is no reason to stop following the socket.
			if _, done, err := r.pollOnce(ctx, id); done {
				return true, err
			}
		case ev := <-events:
			if done, err := prog.handle(ev); done {
				return true, err
			}
		}
	}
}

// handle takes one message of the prompt (execution.py); done reports
// that the prompt ended, err how.
func (p *comfyProgress) handle(ev comfyEvent) (done bool, err error) {
	switch ev.Type {
	case "execution_cached":
		for _, n := range ev.Data.Nodes {
			p.finished(n)
		}
	case "executing":
		n := ev.node()
		if n == "" {
			return true, nil // the end, on servers without execution_success
		}
		p.executing(n)
	case "progress":
		p.step(ev.node(), ev.Data.Value, ev.Data.Max)
	case "executed":
		p.finished(ev.node())
	case "execution_success":
		return true, nil
	case "execution_error", "execution_interrupted":
		return true, ev.failure()
	}
	return false, nil
}

// failure is the error an execution_error or execution_interrupted
// message reports.
func (ev comfyEvent) failure() error {
	if ev.Type == "execution_interrupted" {
		return fmt.Errorf("%w: the prompt was interrupted on the server at node %q (%s)", ErrRunnerFailed, ev.Data.NodeID, ev.Data.NodeType)
	}
	return fmt.Errorf("%w: node %q (%s) failed: %s: %s", ErrRunnerFailed,
		ev.Data.NodeID, ev.Data.NodeType, ev.Data.ExceptionType, ev.Data.ExceptionMessage)
}

func (r *ComfyUIRunner) pollInterval() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return time.Second
}

// comfyHistory is one entry of GET /history/{prompt_id}: {"outputs": {node
// id: {"images"|"gifs"|"videos": [file…]}}, "status": {"status_str",
// "completed", "messages": [[type, data]…]}}; servers before the status
// field add the entry only once the prompt has run.
type comfyHistory struct {
	Outputs map[string]map[string]json.RawMessage `json:"outputs"`
	Status  *struct {
		StatusStr string              `json:"status_str"`
		Completed bool                `json:"completed"`
		Messages  [][]json.RawMessage `json:"messages"`
	} `json:"status"`
}

// history reads GET /history/{id}; found is false while the server has no
// entry for it.
func (r *ComfyUIRunner) history(ctx context.Context, id string) (h comfyHistory, found bool, err error) {
	var all map[string]comfyHistory
	if err := r.call(ctx, http.MethodGet, "/history/"+id, "", nil, &all); err != nil {
		return h, false, err
	}
	h, found = all[id]
	return h, found, nil
}

// outcome is the error a finished history entry records, if any.
func (h comfyHistory) outcome() error {
	if h.Status == nil || h.Status.StatusStr != "error" {
		return nil
	}
	for _, m := range h.Status.Messages {
		var typ string
		if len(m) != 2 || json.Unmarshal(m[0], &typ) != nil {
			continue
		}
		ev := comfyEvent{Type: typ}
		if json.Unmarshal(m[1], &ev.Data) != nil {
			continue
		}
		if typ == "execution_error" || typ == "execution_interrupted" {
			return ev.failure()
		}
	}
	return fmt.Errorf("%w: the prompt ended with status error", ErrRunnerFailed)
}

// poll waits for the prompt's history entry. A prompt that is neither in
// the history nor in the queue was lost (a restarted server keeps neither).
func (r *ComfyUIRunner) poll(ctx context.Context, id string) (comfyHistory, error) {
	tick := time.NewTicker(r.pollInterval())
	defer tick.Stop()
	failures := 0
	for {
		h, done, err := r.pollOnce(ctx, id)
		switch {
		case done:
			return h, err
		case err != nil:
			if ctx.Err() != nil {
				return h, ctx.Err()
			}
			if failures++; failures >= maxComfyPollFailures {
				return h, fmt.Errorf("the server stopped answering: %w", err)
			}
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return comfyHistory{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// pollOnce looks once: done with the entry and the outcome, or not done
// (err: the look failed).
func (r *ComfyUIRunner) pollOnce(ctx context.Context, id string) (h comfyHistory, done bool, err error) {
	h, found, err := r.history(ctx, id)
	if err != nil {
		return h, false, err
	}
	if found && (h.Status == nil || h.Status.Completed || h.Status.StatusStr != "") {
		return h, true, h.outcome()
	}
	q, err := r.queue(ctx)
	if err != nil {
		return h, false, err
	}
	if running, pending := q.find(id, ""); running != "" || pending != "" {
		return h, false, nil
	}
	// It may have finished between the two looks.
	if h, found, err = r.history(ctx, id); err != nil {
		return h, false, err
	}
	if found {
		return h, true, h.outcome()
	}
	return h, true, fmt.Errorf("%w: the server no longer knows the prompt (restarted?)", ErrRunnerFailed)
}

// comfyProgress maps the run's messages onto a percentage. Each node has a
// weight: its "steps" input for a sampler, else 1 (ComfyWorkflow weights).
// Nodes that are cached or have finished count whole; the running node
// counts value/max of its last "progress" message. Nodes that do not run
// (not needed for an output) are simply never counted, and the span's end
// comes when the prompt ends.
type comfyProgress struct {
	weights map[string]float64
	total   float64
	done    map[string]bool
	doneW   float64
	current string
	frac    float64
	fn      ProgressFunc
}

func newComfyProgress(w *ComfyWorkflow, fn ProgressFunc) *comfyProgress {
	p := &comfyProgress{weights: w.weights, done: map[string]bool{}, fn: fn}
	for _, wt := range w.weights {
		p.total += wt
	}
	return p
}

func (p *comfyProgress) finished(node string) {
	if w, ok := p.weights[node]; ok && !p.done[node] {
		p.done[node] = true
		p.doneW += w
	}
	if node == p.current {
		p.current, p.frac = "", 0
	}
	p.report()
}

// executing: a node starts, so the one before it has finished. An id
// that is not in the workflow is a node that one of its nodes expanded
// into at run time (execution.py node expansion): part of the current one.
func (p *comfyProgress) executing(node string) {
	if _, ok := p.weights[node]; !ok {
		return
	}
	if p.current != "" && p.current != node {
		p.finished(p.current)
	}
	p.current, p.frac = node, 0
	p.report()
}

func (p *comfyProgress) step(node string, value, max float64) {
	if node != "" && node != p.current {
		p.executing(node) // a no-op for an expanded node
	}
	if max > 0 {
		p.frac = min(value/max, 1)
	}
	p.report()
}

func (p *comfyProgress) report() {
	if p.fn == nil || p.total <= 0 {
		return
	}
	got := p.doneW
	if p.current != "" && !p.done[p.current] {
		got += p.weights[p.current] * p.frac
	}
	p.fn(int(100 * got / p.total))
}
