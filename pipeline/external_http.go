package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HTTPRunner renders through a model server over HTTP: the external runner
// protocol, version 1, for servers rather than commands (README.md,
// "External runner protocol").
//
//   - It POSTs multipart/form-data to URL: a part "request" holding the
//     ExternalRequest JSON (input_images name the parts that follow,
//     output_path is empty) and one part per input image, "image-0",
//     "image-1", … with the image's bytes.
//   - A 2xx answer whose Content-Type is video/* or
//     application/octet-stream is the clip itself.
//   - Any other 2xx answer is a stream of lines: "progress N" as for
//     commands, "error MESSAGE" to fail the render, other lines ignored;
//     then "clip N" and exactly N bytes of the clip, which end the body.
//   - Any other status fails the render with the status and the start of
//     the body.
//
// Cancelling the render closes the connection; the server should stop.
type HTTPRunner struct {
	URL    string
	Client *http.Client // nil: a client without a timeout (renders are long)
	// MaxBytes bounds the clip; 0 means DefaultHTTPRunnerMaxBytes.
	MaxBytes int64
	// GPUIDs are the GPUs the lease holds, sent as gpu_ids (a command
	// runner gets them in CUDA_VISIBLE_DEVICES as well).
	GPUIDs []string
}

var _ Runner = (*HTTPRunner)(nil)

// DefaultHTTPRunnerMaxBytes is the largest clip an HTTPRunner accepts by
// default: minutes of 4K at a high bitrate fit.
const DefaultHTTPRunnerMaxBytes = 4 << 30

// maxRunnerLine bounds one line of the progress stream.
const maxRunnerLine = 64 << 10

// ErrRunnerFailed means an external runner reported that the render failed.
var ErrRunnerFailed = errors.New("pipeline: the runner failed")

// IsRunnerURL reports whether spec names an HTTP runner rather than a
// command: an absolute http or https URL.
func IsRunnerURL(spec string) bool {
	u, err := url.Parse(spec)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Render implements Runner.
func (r *HTTPRunner) Render(ctx context.Context, req RenderRequest, progress ProgressFunc) error {
	if !IsRunnerURL(r.URL) {
		return invalidf("http runner for model %q: %q is not an http(s) URL", req.Model, r.URL)
	}
	req, w, h, err := req.normalized()
	if err != nil {
		return err
	}
	where := "http runner " + RedactURL(r.URL) + " for model " + req.Model
	body, ctype, err := httpRunnerBody(req, w, h, r.GPUIDs)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := os.MkdirAll(filepath.Dir(req.OutputPath), 0o755); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	_ = os.Remove(req.OutputPath) // a stale clip must not pass for this render's
	rep := newReporter(progress)
	rep.report(0)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, body)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	hreq.Header.Set("Content-Type", ctype)
	hreq.Header.Set("X-Vidfarm-Protocol", ExternalProtocol)
	client := r.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", where, stoppedBy(ctx))
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s: %w: answered %s: %s", where, ErrRunnerFailed, resp.Status, strings.TrimSpace(string(head)))
	}
	maxBytes := r.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultHTTPRunnerMaxBytes
	}
	if err := receiveClip(resp, req.OutputPath, maxBytes, externalProgress(rep)); err != nil {
		_ = os.Remove(req.OutputPath)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", where, stoppedBy(ctx))
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := checkOutput(req.OutputPath); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	rep.report(100)
	return nil
}

// httpRunnerBody is the multipart request: the JSON request, then the
// images.
func httpRunnerBody(req RenderRequest, w, h int, gpus []string) (io.Reader, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	images := req.InputImages
	sent := ExternalRequest{Protocol: ExternalProtocol, RenderRequest: req, Width: w, Height: h, GPUIDs: gpus}
	sent.OutputPath = ""
	sent.InputImages = nil
	for i := range images {
		sent.InputImages = append(sent.InputImages, "image-"+strconv.Itoa(i))
	}
	js, err := json.Marshal(sent)
	if err != nil {
		return nil, "", fmt.Errorf("encode request: %w", err)
	}
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="request"`},
		"Content-Type":        {"application/json"},
	})
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write(js); err != nil {
		return nil, "", err
	}
	for i, path := range images {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", fmt.Errorf("input image %d: %w", i, err)
		}
		part, err := mw.CreateFormFile(sent.InputImages[i], filepath.Base(path))
		if err == nil {
			_, err = io.Copy(part, f)
		}
		f.Close()
		if err != nil {
			return nil, "", fmt.Errorf("input image %d: %w", i, err)
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return &buf, mw.FormDataContentType(), nil
}

// receiveClip writes the clip of a 2xx answer to path: the whole body for
// a video answer, else what follows the "clip N" line of the stream.
func receiveClip(resp *http.Response, path string, maxBytes int64, onProgress func(string)) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if strings.HasPrefix(mt, "video/") || mt == "application/octet-stream" {
		return writeClip(path, resp.Body, -1, maxBytes)
	}
	br := bufio.NewReaderSize(resp.Body, 32<<10)
	for {
		line, err := readRunnerLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the answer ended without a clip", ErrNoOutput)
			}
			return err
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "progress":
			onProgress(line)
		case "error":
			return fmt.Errorf("%w: %s", ErrRunnerFailed, strings.TrimSpace(rest))
		case "clip":
			n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("%w: bad clip line %q", ErrRunnerFailed, line)
			}
			if n > maxBytes {
				return fmt.Errorf("%w: clip of %d bytes is over the limit of %d", ErrRunnerFailed, n, maxBytes)
			}
			return writeClip(path, br, n, maxBytes)
		}
	}
}

// readRunnerLine reads one line of at most maxRunnerLine bytes, without
// its line ending.
func readRunnerLine(br *bufio.Reader) (string, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return "", err
		}
		line = append(line, chunk...)
		if len(line) > maxRunnerLine {
			return "", fmt.Errorf("%w: a line of the answer is over %d bytes", ErrRunnerFailed, maxRunnerLine)
		}
		if !isPrefix {
			return string(line), nil
		}
	}
}

// writeClip copies the clip to path: exactly n bytes, or with n < 0 all
// of r; never more than maxBytes.
func writeClip(path string, r io.Reader, n, maxBytes int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	limit := maxBytes + 1
	if n >= 0 {
		limit = n
	}
	got, err := io.Copy(f, io.LimitReader(r, limit))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("receive clip: %w", err)
	case n < 0 && got > maxBytes:
		return fmt.Errorf("%w: clip is over the limit of %d bytes", ErrRunnerFailed, maxBytes)
	case n >= 0 && got < n:
		return fmt.Errorf("%w: the answer ended after %d of the clip's %d bytes", ErrRunnerFailed, got, n)
	}
	return nil
}

// RedactURL is u without its password, for logs and messages; u as it was
// given when it has none (or is no URL), so a message shows what the user
// typed ("https://" is not rewritten "https:").
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	return p.Redacted()
}
