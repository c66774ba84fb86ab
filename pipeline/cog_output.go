package pipeline

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
)

// saveOutput writes the clip a succeeded prediction returned to path.
func (c *cogCall) saveOutput(ctx context.Context, p cogPrediction, path string) error {
	ref, err := outputRef(p.Output)
	if err != nil {
		return err
	}
	if strings.HasPrefix(ref, "data:") {
		return saveDataURI(ref, path, c.maxBytes())
	}
	if !IsRunnerURL(ref) {
		return fmt.Errorf("%w: the output %.80q is neither a URL nor a data URI", ErrRunnerFailed, ref)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return err
	}
	resp, err := c.client().Do(hreq)
	if err != nil {
		return fmt.Errorf("download output %s: %w", RedactURL(ref), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: download output %s: answered %s", ErrRunnerFailed, RedactURL(ref), resp.Status)
	}
	return writeClip(path, resp.Body, -1, c.maxBytes())
}

// outputRef is the clip's URL or data URI in an output: a string, or the
// last string of a list (an iterator's outputs).
func outputRef(raw json.RawMessage) (string, error) {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return "", fmt.Errorf("%w: the prediction succeeded without an output, not a file", ErrRunnerFailed)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err == nil && len(list) > 0 {
		return outputRef(list[len(list)-1])
	}
	return "", fmt.Errorf("%w: the output %.80s is not a file (a URL or data URI)", ErrRunnerFailed, string(raw))
}

// saveDataURI decodes a base64 data URI into path.
func saveDataURI(ref, path string, maxBytes int64) error {
	meta, data, ok := strings.Cut(strings.TrimPrefix(ref, "data:"), ",")
	mt, _, _ := mime.ParseMediaType(strings.TrimSuffix(meta, ";base64"))
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return fmt.Errorf("%w: the output is a data URI that is not base64", ErrRunnerFailed)
	}
	if mt != "" && !strings.HasPrefix(mt, "video/") && mt != "application/octet-stream" {
		return fmt.Errorf("%w: the output is %s, not a video", ErrRunnerFailed, mt)
	}
	if int64(base64.StdEncoding.DecodedLen(len(data))) > maxBytes {
		return fmt.Errorf("%w: clip is over the limit of %d bytes", ErrRunnerFailed, maxBytes)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return fmt.Errorf("%w: the output's data URI does not decode: %v", ErrRunnerFailed, err)
	}
	return os.WriteFile(path, b, 0o644)
}

// cogStatus turns a refused prediction request into an error and closes
// its body; a 2xx answer is left open.
func cogStatus(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	msg := strings.TrimSpace(string(head))
	switch resp.StatusCode {
	case http.StatusConflict:
		return fmt.Errorf("%w: every prediction slot is in use (409); lower this runner's concurrency to what the model takes at once: %s", ErrCogBusy, msg)
	case http.StatusServiceUnavailable:
		return fmt.Errorf("%w: answered %s: %s", ErrCogNotReady, resp.Status, msg)
	case http.StatusUnprocessableEntity:
		return fmt.Errorf("%w: the model refused the input (422; check `inputs` in the runners file): %s", ErrRunnerFailed, msg)
	}
	return fmt.Errorf("%w: answered %s: %s", ErrRunnerFailed, resp.Status, msg)
}

// finished checks a terminal prediction: only succeeded has an output.
func finished(p cogPrediction) (cogPrediction, error) {
	switch p.Status {
	case "succeeded":
		return p, nil
	case "failed":
		return p, fmt.Errorf("%w: the prediction failed: %s", ErrRunnerFailed, cogErrorText(p))
	case "canceled":
		return p, fmt.Errorf("%w: the prediction was cancelled on the server", ErrRunnerFailed)
	}
	return p, fmt.Errorf("%w: the prediction ended in status %q", ErrRunnerFailed, p.Status)
}

// cogErrorText is a failed prediction's error, else the tail of its logs.
func cogErrorText(p cogPrediction) string {
	switch e := p.Error.(type) {
	case string:
		if e != "" {
			return e
		}
	case nil:
	default:
		b, _ := json.Marshal(e)
		return string(b)
	}
	logs := tail(p.Logs, 1024)
	if logs == "" {
		return "(no error message)"
	}
	return logs
}
