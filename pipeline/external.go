package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ExternalProtocol names version 1 of the external runner protocol; it is
// the "protocol" field of every request.
const ExternalProtocol = "vidfarm.render.v1"

// ExternalRunner renders through a separate program (a real model server's
// client, a script): the external runner protocol, version 1.
//
//   - The program is started as Command[0] with arguments Command[1:], in
//     Dir, with the request as one JSON object on stdin (ExternalRequest).
//   - It writes lines of the form "progress N" (N from 0 to 100, may be
//     fractional) to stdout as it works; other stdout lines are ignored.
//   - It writes an MP4 clip to the request's output_path (directories
//     exist) and exits 0. Exiting non-zero fails the render, with the tail
//     of its stderr in the error; exiting 0 without a non-empty
//     output_path fails it with ErrNoOutput.
//   - When the render is cancelled the program's process group is killed.
//
// The clip is normally passed through finalize afterwards, so any codec
// ffmpeg reads is accepted.
type ExternalRunner struct {
	Command []string // program and its fixed arguments
	Dir     string   // working directory; "" is the agent's
	Env     []string // extra KEY=value variables, e.g. CUDA_VISIBLE_DEVICES=1
	Exec    Executor // nil: OSExecutor{}
	GPUIDs  []string // the GPUs the lease holds, sent as gpu_ids
}

var _ Runner = (*ExternalRunner)(nil)

// ExternalRequest is the JSON object an external runner reads on stdin: the
// render request plus the protocol version and the frame size worked out
// from resolution and aspect_ratio (see FrameSize).
type ExternalRequest struct {
	Protocol string `json:"protocol"` // ExternalProtocol
	RenderRequest
	Width  int `json:"width"`
	Height int `json:"height"`
	// GPUIDs are the ids of the GPUs the lease holds on the node (empty on
	// a node without NVIDIA GPUs); a command also gets them in
	// CUDA_VISIBLE_DEVICES.
	GPUIDs []string `json:"gpu_ids,omitempty"`
}

// Render implements Runner.
func (r *ExternalRunner) Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error {
	if len(r.Command) == 0 || r.Command[0] == "" {
		return invalidf("external runner for model %q has no command", req.Model)
	}
	req, w, h, err := req.normalized()
	if err != nil {
		return err
	}
	body, err := json.Marshal(ExternalRequest{Protocol: ExternalProtocol, RenderRequest: req, Width: w, Height: h, GPUIDs: r.GPUIDs})
	if err != nil {
		return fmt.Errorf("external runner: encode request: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(req.OutputPath), 0o755); err != nil {
		return fmt.Errorf("external runner: %w", err)
	}
	_ = os.Remove(req.OutputPath) // a stale clip must not pass for this render's
	rep := newReporter(progress)
	rep.report(0)
	ex := r.Exec
	if ex == nil {
		ex = OSExecutor{}
	}
	_, err = ex.Run(ctx, Command{
		Name:         r.Command[0],
		Args:         r.Command[1:],
		Dir:          r.Dir,
		Env:          r.Env,
		Stdin:        bytes.NewReader(body),
		OnStdoutLine: externalProgress(rep),
	})
	if err != nil {
		return fmt.Errorf("external runner %s for model %s: %w", filepath.Base(r.Command[0]), req.Model, err)
	}
	if err := checkOutput(req.OutputPath); err != nil {
		return fmt.Errorf("external runner %s for model %s: %w", filepath.Base(r.Command[0]), req.Model, err)
	}
	rep.report(100)
	return nil
}

// externalProgress parses "progress N" lines, capping N at 99 until the
// clip has been checked.
func externalProgress(rep *reporter) func(string) {
	return func(line string) {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != "progress" {
			return
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
		if err != nil || math.IsNaN(p) {
			return
		}
		rep.report(min(int(p), 99))
	}
}
