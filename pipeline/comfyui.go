package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ComfyUIRunner renders through a ComfyUI server: it uploads the request's
// files, queues Workflow with the request's values in its placeholders,
// follows the run on the server's websocket, and downloads the video the
// workflow saved. The routes and messages are those of ComfyUI's server.py
// (github.com/comfyanonymous/ComfyUI: PromptServer routes /upload/image,
// /prompt, /ws, /history/{prompt_id}, /view, /queue, /interrupt,
// /system_stats) and execution.py (the messages sent while a prompt runs).
// README.md, "ComfyUI runner", describes the choices made.
//
// One ComfyUIRunner may render several requests at once; each uses its own
// websocket client id.
type ComfyUIRunner struct {
	URL      string         // the server, e.g. http://127.0.0.1:8188
	Workflow *ComfyWorkflow // from LoadComfyWorkflow
	// OutputNode is the id of the node whose video is the clip; "" means
	// the only node that gave a video.
	OutputNode string

	Client *http.Client // nil: a client without a timeout (renders are long)
	Tools  *Tools       // probes the clip; nil: &Tools{}
	// MaxBytes bounds the clip; 0 means DefaultHTTPRunnerMaxBytes.
	MaxBytes int64
	// PollInterval is how often /history is asked once the websocket is
	// lost; 0 means one second.
	PollInterval time.Duration
	Logger       *slog.Logger // nil: slog.Default()
}

var _ Runner = (*ComfyUIRunner)(nil)

// comfyControlTimeout bounds the short calls (queue, interrupt, health).
const comfyControlTimeout = 15 * time.Second

// Validate checks the configuration: an http(s) URL, a workflow, and an
// OutputNode that is one of its nodes.
func (r *ComfyUIRunner) Validate() error {
	if !IsRunnerURL(r.URL) {
		return invalidf("comfyui runner: %q is not an http(s) URL", r.URL)
	}
	if r.Workflow == nil {
		return invalidf("comfyui runner %s: no workflow", RedactURL(r.URL))
	}
	if r.OutputNode != "" && !r.Workflow.HasNode(r.OutputNode) {
		return fmt.Errorf("%w: %s: output_node %q is not a node of the workflow", ErrInvalidWorkflow, r.Workflow.Source, r.OutputNode)
	}
	return nil
}

// Render implements Runner.
func (r *ComfyUIRunner) Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error {
	req, w, h, err := req.normalized()
	if err != nil {
		return err
	}
	if err := r.Run(ctx, comfyRequestInputs(req, w, h), req.OutputPath, progress); err != nil {
		return fmt.Errorf("model %s: %w", req.Model, err)
	}
	return nil
}

// Run queues the workflow with in's values, waits for it and writes the
// video it made to outputPath. Render calls it with a request's fields;
// the avatar stage calls it with audio and portrait.
func (r *ComfyUIRunner) Run(ctx context.Context, in ComfyInputs, outputPath string, progress ProgressFunc) error {
	if err := r.Validate(); err != nil {
		return err
	}
	where := "comfyui runner " + RedactURL(r.URL)
	if outputPath == "" {
		return invalidf("%s: output path is empty", where)
	}
	if err := r.Workflow.check(in); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := os.MkdirAll(filepath.Dir(outputPath), 0o755); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	_ = os.Remove(outputPath) // a stale clip must not pass for this render's
	rep := newReporter(progress)
	rep.report(0)

	clientID, promptID := randomHex(16), randomUUID()
	// The websocket is opened before the prompt is queued, so that no
	// message of the run can be missed.
	ws, err := r.dialWS(ctx, clientID)
	if err != nil {
		r.logger().Warn("comfyui websocket unavailable; following the prompt by polling /history", "url", RedactURL(r.URL), "err", err)
	}
	defer func() {
		if ws != nil {
			ws.CloseNow()
		}
	}()
	values, err := r.upload(ctx, in, clientID)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	rep.report(2)
	prompt, err := r.Workflow.fill(values)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	id, err := r.queuePrompt(ctx, prompt, clientID, promptID)
	if err != nil {
		if ctx.Err() != nil {
			// The request may have reached the server: newer servers use
			// the prompt id we chose, so it can still be taken back.
			r.cancelPrompt(promptID, clientID)
			return fmt.Errorf("%s: %w", where, stoppedBy(ctx))
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	h, err := r.wait(ctx, ws, id, newComfyProgress(r.Workflow, rep.span(3, 95)))
	if err != nil {
		if ctx.Err() != nil {
			r.cancelPrompt(id, clientID)
			return fmt.Errorf("%s: prompt %s: %w", where, id, stoppedBy(ctx))
		}
		return fmt.Errorf("%s: prompt %s: %w", where, id, err)
	}
	rep.report(95)
	if err := r.fetchOutput(ctx, h, outputPath); err != nil {
		_ = os.Remove(outputPath)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: prompt %s: %w", where, id, stoppedBy(ctx))
		}
		return fmt.Errorf("%s: prompt %s: %w", where, id, err)
	}
	rep.report(100)
	return nil
}

// upload sends the file fields of in that the workflow uses to
// POST /upload/image (server.py image_upload: multipart field "image",
// "overwrite", "type"; it answers {"name", "subfolder", "type"}) and
// returns the values to fill in: uploaded names in place of paths. The
// names carry the client id, so concurrent renders never share a file.
func (r *ComfyUIRunner) upload(ctx context.Context, in ComfyInputs, clientID string) (map[string]any, error) {
	values := map[string]any{}
	for _, field := range r.Workflow.Fields() {
		v, ok := in[field]
		if !ok {
			continue // Run checked that the workflow does not need it
		}
		switch p := v.(type) {
		case string:
			if !slices.Contains(comfyFileFields, field) {
				values[field] = v
				continue
			}
			name, err := r.uploadFile(ctx, p, "vidfarm-"+clientID+"-"+field)
			if err != nil {
				return nil, fmt.Errorf("upload %s: %w", field, err)
			}
			values[field] = name
		case []string:
			names := make([]string, len(p))
			for i, path := range p {
				name, err := r.uploadFile(ctx, path, fmt.Sprintf("vidfarm-%s-%s-%d", clientID, field, i))
				if err != nil {
					return nil, fmt.Errorf("upload %s[%d]: %w", field, i, err)
				}
				names[i] = name
			}
			values[field] = names
		default:
			values[field] = v
		}
	}
	return values, nil
}

// uploadFile uploads one file under base plus its extension and returns
// the name a workflow's loader node takes: "subfolder/name", or the name.
func (r *ComfyUIRunner) uploadFile(ctx context.Context, path, base string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("image", base+strings.ToLower(filepath.Ext(path)))
	if err == nil {
		_, err = io.Copy(part, f)
	}
	if err == nil {
		err = mw.WriteField("overwrite", "true")
	}
	if err == nil {
		err = mw.WriteField("type", "input")
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", err
	}
	var got struct {
		Name      string `json:"name"`
		Subfolder string `json:"subfolder"`
	}
	if err := r.call(ctx, http.MethodPost, "/upload/image", mw.FormDataContentType(), &body, &got); err != nil {
		return "", err
	}
	if got.Name == "" {
		return "", fmt.Errorf("%w: /upload/image answered without a name", ErrRunnerFailed)
	}
	if got.Subfolder != "" {
		return got.Subfolder + "/" + got.Name, nil
	}
	return got.Name, nil
}

// queuePrompt is POST /prompt (server.py post_prompt). It sends the
// prompt id it chose, which newer servers use (so a cancel before the
// answer can still name it), and returns the id the server answered.
func (r *ComfyUIRunner) queuePrompt(ctx context.Context, prompt map[string]any, clientID, promptID string) (string, error) {
	js, err := json.Marshal(map[string]any{"prompt": prompt, "client_id": clientID, "prompt_id": promptID})
	if err != nil {
		return "", fmt.Errorf("encode prompt: %w", err)
	}
	var got struct {
		PromptID   string                     `json:"prompt_id"`
		NodeErrors map[string]json.RawMessage `json:"node_errors"`
	}
	if err := r.call(ctx, http.MethodPost, "/prompt", "application/json", bytes.NewReader(js), &got); err != nil {
		var se *comfyStatusError
		if errors.As(err, &se) && se.status == http.StatusBadRequest {
			return "", fmt.Errorf("%w: ComfyUI refused the workflow: %s", ErrRunnerFailed, comfyPromptErrors(se.body))
		}
		return "", fmt.Errorf("queue prompt: %w", err)
	}
	if got.PromptID == "" {
		return "", fmt.Errorf("%w: /prompt answered without a prompt_id", ErrRunnerFailed)
	}
	if len(got.NodeErrors) > 0 {
		// ComfyUI queues a prompt when some of its outputs validate and
		// drops the others; the clip's may be among those.
		js, _ := json.Marshal(map[string]any{"node_errors": got.NodeErrors})
		r.logger().Warn("comfyui queued the prompt without some of its outputs", "url", RedactURL(r.URL),
			"prompt_id", got.PromptID, "errors", comfyPromptErrors(js))
	}
	return got.PromptID, nil
}

// comfyPromptErrors makes the 400 answer of /prompt readable: {"error":
// {"type", "message", "details"} (a string on older servers),
// "node_errors": {id: {"class_type", "errors": [{"message", "details",
// "extra_info": {"input_name"}}]}}} (execution.py validate_prompt).
func comfyPromptErrors(body []byte) string {
	var ans struct {
		Error      json.RawMessage `json:"error"`
		NodeErrors map[string]struct {
			ClassType string `json:"class_type"`
			Errors    []struct {
				Message   string `json:"message"`
				Details   string `json:"details"`
				ExtraInfo struct {
					InputName string `json:"input_name"`
				} `json:"extra_info"`
			} `json:"errors"`
		} `json:"node_errors"`
	}
	if json.Unmarshal(body, &ans) != nil {
		return strings.TrimSpace(string(body))
	}
	var msgs []string
	for _, id := range sortedKeys(ans.NodeErrors) {
		ne := ans.NodeErrors[id]
		for _, e := range ne.Errors {
			m := fmt.Sprintf("node %q (%s)", id, ne.ClassType)
			if e.ExtraInfo.InputName != "" {
				m += fmt.Sprintf(" input %q", e.ExtraInfo.InputName)
			}
			m += ": " + e.Message
			if e.Details != "" {
				m += ": " + e.Details
			}
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	var top struct {
		Message string `json:"message"`
		Details string `json:"details"`
	}
	var s string
	switch {
	case json.Unmarshal(ans.Error, &top) == nil && top.Message != "":
		if top.Details != "" {
			return top.Message + ": " + top.Details
		}
		return top.Message
	case json.Unmarshal(ans.Error, &s) == nil && s != "":
		return s
	}
	return strings.TrimSpace(string(body))
}

func (r *ComfyUIRunner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// randomUUID is a random (version 4) UUID, the form of ComfyUI's own
// prompt ids.
func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
