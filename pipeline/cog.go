package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CogRunner renders through a Cog model container's HTTP API, as
// documented in github.com/replicate/cog docs/http.md ("HTTP API"; the
// server is crates/coglet/src/transport/http/routes.rs):
//
//   - PUT /predictions/{id} with {"id", "input"}: the idempotent endpoint,
//     so a request repeated after a dropped connection joins the running
//     prediction instead of starting a second one. ID is stable per task
//     attempt (the agent derives it from the task and its lease token).
//   - Accept: text/event-stream: the server answers 200 and streams the
//     prediction's events (start, output, log, metric, completed; error when
//     its replay buffer lost events). Of the two asynchronous modes this is
//     the one that needs no connection from the container to the agent:
//     Prefer: respond-async reports only through webhooks (polling is not
//     supported), which a GPU node behind NAT or in another pod may not be
//     able to receive. Progress comes from the "log" events (tqdm-like
//     "NN%" or "N/M" lines).
//   - A model without @cog.streaming answers 406 to that; the runner then
//     repeats the PUT without the Accept header (synchronous and idempotent:
//     no progress until the end, and Cog documents that a synchronous
//     prediction cannot be cancelled, so cancelling only closes the call).
//     A Cog without event streams ignores Accept and answers the same way.
//   - A PUT whose answer is lost, or whose stream breaks, is repeated with
//     the same id (up to cogStreamAttempts times).
//   - The output is a URL (the server was started with --upload-url; it is
//     downloaded) or a data URI (decoded). An iterator's output is a list:
//     its last element is the clip.
//   - Cancelling ctx sends POST /predictions/{id}/cancel.
//
// Health (GET /health-check, GET /openapi.json) is for the agent's
// capacity: see Health.
type CogRunner struct {
	URL    string       // base URL of the container, e.g. http://127.0.0.1:5000
	Client *http.Client // nil: a client without a timeout (renders are long)
	// Inputs maps a request field (CogFields) to the name of the model's
	// input; a field left out is not sent.
	Inputs map[string]string
	// ID is the prediction id; "" draws a random one. The agent sets one
	// per task attempt, so a repeated PUT is the same prediction.
	ID string
	// MaxBytes bounds the clip; 0 means DefaultHTTPRunnerMaxBytes.
	MaxBytes int64
}

var _ Runner = (*CogRunner)(nil)

// Request fields a CogRunner can send, the keys of CogRunner.Inputs.
const (
	FieldPrompt          = "prompt"
	FieldNegativePrompt  = "negative_prompt"
	FieldSeed            = "seed"
	FieldWidth           = "width"
	FieldHeight          = "height"
	FieldNumFrames       = "num_frames"
	FieldFPS             = "fps"
	FieldDurationSeconds = "duration_seconds"
	FieldImage           = "image"      // the first input image, a data URI
	FieldLastImage       = "last_image" // the last input image (first_last_frame)
	FieldImages          = "images"     // every input image, a list of data URIs
)

// CogFields are the request fields a CogRunner maps, in a stable order.
var CogFields = []string{FieldPrompt, FieldNegativePrompt, FieldSeed, FieldWidth, FieldHeight, FieldNumFrames,
	FieldFPS, FieldDurationSeconds, FieldImage, FieldLastImage, FieldImages}

// Errors of a Cog container.
var (
	// ErrCogNotReady means the container's health check does not say READY
	// or BUSY: it is starting, its setup failed, or it is defunct.
	ErrCogNotReady = errors.New("pipeline: cog model is not ready")
	// ErrCogInputs means the model's OpenAPI Input schema lacks an input the
	// runner is configured to send.
	ErrCogInputs = errors.New("pipeline: cog model does not take the configured inputs")
	// ErrCogBusy means every prediction slot of the container is in use
	// (409): more tasks were sent to it than it takes at once.
	ErrCogBusy = errors.New("pipeline: cog model is busy")
)

// cogCancelTimeout bounds the cancel request sent after ctx is done.
const cogCancelTimeout = 10 * time.Second

// cogStreamAttempts is how often one render (re)connects to its
// prediction's event stream when the connection drops.
const cogStreamAttempts = 3

// cogPrediction is Cog's prediction object (docs/http.md, "POST
// /predictions"), as sent by the "completed" event and synchronous answers.
type cogPrediction struct {
	ID     string          `json:"id"`
	Status string          `json:"status"` // starting, processing, succeeded, failed, canceled
	Output json.RawMessage `json:"output"`
	Error  any             `json:"error"`
	Logs   string          `json:"logs"`
}

// Render implements Runner.
func (r *CogRunner) Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error {
	if !IsRunnerURL(r.URL) {
		return invalidf("cog runner for model %q: %q is not an http(s) URL", req.Model, r.URL)
	}
	req, w, h, err := req.normalized()
	if err != nil {
		return err
	}
	where := "cog model " + RedactURL(r.URL) + " for model " + req.Model
	input, err := cogInput(req, w, h, r.Inputs)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return r.predict(ctx, where, input, req.OutputPath, progress)
}

// Run runs one prediction whose inputs are files: each field of files
// (e.g. "audio", "portrait" for the avatar stage) is sent as a data URI
// under the input name Inputs maps it to, and the output is written to
// outputPath. A field that Inputs does not map is an ErrInvalidRequest.
func (r *CogRunner) Run(ctx context.Context, files map[string]string, outputPath string, progress ProgressFunc) error {
	if !IsRunnerURL(r.URL) {
		return invalidf("cog runner: %q is not an http(s) URL", r.URL)
	}
	where := "cog model " + RedactURL(r.URL)
	input := make(map[string]any, len(files))
	for field, path := range files {
		name, ok := r.Inputs[field]
		if !ok {
			return invalidf("%s: no input name for %q: map it in the runner's inputs", where, field)
		}
		u, err := dataURI(path)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", where, field, err)
		}
		input[name] = u
	}
	return r.predict(ctx, where, input, outputPath, progress)
}

// predict runs the prediction of input and saves its output at outputPath.
func (r *CogRunner) predict(ctx context.Context, where string, input map[string]any, outputPath string, progress ProgressFunc) error {
	id := r.ID
	if id == "" {
		id = newPredictionID()
	}
	body, err := json.Marshal(map[string]any{"id": id, "input": input})
	if err != nil {
		return fmt.Errorf("%s: encode input: %w", where, err)
	}
	if err := os.MkdirAll(filepath.Dir(outputPath), 0o755); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	_ = os.Remove(outputPath) // a stale clip must not pass for this render's
	rep := newReporter(progress)
	rep.report(0)
	c := cogCall{r: r, id: id, body: body, rep: rep}
	pred, err := c.predict(ctx)
	if err != nil {
		if ctx.Err() != nil {
			c.cancel(ctx)
			return fmt.Errorf("%s: prediction %s cancelled: %w", where, id, stoppedBy(ctx))
		}
		return fmt.Errorf("%s: prediction %s: %w", where, id, err)
	}
	if err := c.saveOutput(ctx, pred, outputPath); err != nil {
		_ = os.Remove(outputPath)
		return fmt.Errorf("%s: prediction %s: %w", where, id, err)
	}
	if err := checkOutput(outputPath); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	rep.report(100)
	return nil
}

// cogInput builds the prediction's input from req per mapping.
func cogInput(req RenderRequest, w, h int, mapping map[string]string) (map[string]any, error) {
	in := make(map[string]any, len(mapping))
	for field, name := range mapping {
		var v any
		switch field {
		case FieldPrompt:
			v = req.Prompt
		case FieldNegativePrompt:
			if req.NegativePrompt == "" {
				continue
			}
			v = req.NegativePrompt
		case FieldSeed:
			v = req.Seed
		case FieldWidth:
			v = w
		case FieldHeight:
			v = h
		case FieldNumFrames:
			v = int(math.Round(req.DurationSeconds * float64(req.FPS)))
		case FieldFPS:
			v = req.FPS
		case FieldDurationSeconds:
			v = req.DurationSeconds
		case FieldImage, FieldLastImage, FieldImages:
			if len(req.InputImages) == 0 {
				continue
			}
			var err error
			if v, err = imageInput(field, req.InputImages); err != nil {
				return nil, err
			}
		default:
			return nil, invalidf("input %q: not a request field a cog runner sends (%s)", field, strings.Join(CogFields, ", "))
		}
		in[name] = v
	}
	return in, nil
}

// imageInput is the data URI (or list of them) an image field sends.
func imageInput(field string, paths []string) (any, error) {
	switch field {
	case FieldImage:
		return dataURI(paths[0])
	case FieldLastImage:
		return dataURI(paths[len(paths)-1])
	}
	list := make([]string, len(paths))
	for i, p := range paths {
		u, err := dataURI(p)
		if err != nil {
			return nil, err
		}
		list[i] = u
	}
	return list, nil
}

// dataURI is the file at path as a base64 data URI; Cog takes one wherever
// an input is a File or Path.
func dataURI(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("input image: %w", err)
	}
	ct, _, _ := strings.Cut(http.DetectContentType(b), ";")
	return "data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}

// newPredictionID is a random id in the form docs/http.md recommends: 128
// random bits, base32, lower case, no padding (26 characters).
func newPredictionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return CogPredictionID(b[:])
}

// CogPredictionID formats the first 16 bytes of b (a hash of a task
// attempt, random bytes) as a prediction id.
func CogPredictionID(b []byte) string {
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:min(len(b), 16)]))
}

// cogCall is one render's conversation with the container.
type cogCall struct {
	r    *CogRunner
	id   string
	body []byte
	rep  *reporter
}

func (c *cogCall) client() *http.Client {
	if c.r.Client != nil {
		return c.r.Client
	}
	return &http.Client{}
}

func (c *cogCall) endpoint(path string) string {
	return strings.TrimRight(c.r.URL, "/") + path
}

func (c *cogCall) maxBytes() int64 {
	if c.r.MaxBytes > 0 {
		return c.r.MaxBytes
	}
	return DefaultHTTPRunnerMaxBytes
}

// predict runs the prediction to its end and returns the final object of a
// succeeded one.
func (c *cogCall) predict(ctx context.Context) (cogPrediction, error) {
	var lastErr error
	for range cogStreamAttempts {
		resp, err := c.put(ctx, true)
		if err != nil {
			if ctx.Err() != nil {
				return cogPrediction{}, err
			}
			// The answer was lost (the connection dropped): the same id
			// joins the prediction if the request reached the container
			// (docs/http.md, "PUT /predictions/<prediction_id>").
			lastErr = err
			continue
		}
		if resp.StatusCode == http.StatusNotAcceptable {
			resp.Body.Close()
			return c.predictSync(ctx, nil)
		}
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
			// A Cog without event streams ignores Accept and answers
			// synchronously with the final prediction.
			return c.predictSync(ctx, resp)
		}
		if err := cogStatus(resp); err != nil {
			return cogPrediction{}, err
		}
		pred, err := c.readStream(resp)
		resp.Body.Close()
		if err == nil {
			return finished(pred)
		}
		if ctx.Err() != nil || !errors.Is(err, errStreamCut) {
			return cogPrediction{}, err
		}
		lastErr = err
	}
	return cogPrediction{}, lastErr
}

// predictSync is the synchronous idempotent PUT for a model that does not
// stream, or resp, the synchronous answer to a stream request.
func (c *cogCall) predictSync(ctx context.Context, resp *http.Response) (cogPrediction, error) {
	if resp == nil {
		var err error
		if resp, err = c.put(ctx, false); err != nil {
			return cogPrediction{}, err
		}
	}
	defer resp.Body.Close()
	if err := cogStatus(resp); err != nil {
		return cogPrediction{}, err
	}
	var pred cogPrediction
	dec := json.NewDecoder(io.LimitReader(resp.Body, c.maxBytes()*2))
	if err := dec.Decode(&pred); err != nil {
		return cogPrediction{}, fmt.Errorf("%w: the answer is not a prediction object: %v", ErrRunnerFailed, err)
	}
	return finished(pred)
}

// put sends the prediction, as a stream request or synchronously.
func (c *cogCall) put(ctx context.Context, stream bool) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPut, c.endpoint("/predictions/"+url.PathEscape(c.id)), bytes.NewReader(c.body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json; charset=utf-8")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	return c.client().Do(hreq)
}

// cancel asks the container to stop the prediction; ctx is already done,
// so the request gets a context of its own.
func (c *cogCall) cancel(ctx context.Context) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cogCancelTimeout)
	defer stop()
	hreq, err := http.NewRequestWithContext(cctx, http.MethodPost, c.endpoint("/predictions/"+url.PathEscape(c.id)+"/cancel"), nil)
	if err != nil {
		return
	}
	if resp, err := c.client().Do(hreq); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}
