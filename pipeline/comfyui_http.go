package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// comfyStatusError is a non-2xx answer of the ComfyUI server.
type comfyStatusError struct {
	method, route string
	status        int
	statusText    string
	body          []byte
}

func (e *comfyStatusError) Error() string {
	return fmt.Sprintf("%s %s answered %s: %s", e.method, e.route, e.statusText, strings.TrimSpace(string(e.body)))
}

// Unwrap makes errors.Is(err, ErrRunnerFailed) true.
func (e *comfyStatusError) Unwrap() error { return ErrRunnerFailed }

// maxComfyAnswer bounds a JSON answer (history entries carry the whole
// prompt and its messages).
const maxComfyAnswer = 64 << 20

// endpoint is the server's URL for route (which may carry a query); the
// URL may have a path prefix (a reverse proxy).
func (r *ComfyUIRunner) endpoint(route string) string {
	return strings.TrimRight(r.URL, "/") + route
}

func (r *ComfyUIRunner) client() *http.Client {
	if r.Client != nil {
		return r.Client
	}
	return &http.Client{}
}

// do sends a request and returns the answer when it is 2xx; any other
// status is a *comfyStatusError with the start of the body.
func (r *ComfyUIRunner) do(ctx context.Context, method, route, ctype string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.endpoint(route), body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := r.client().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		p, _, _ := strings.Cut(route, "?")
		return nil, &comfyStatusError{method: method, route: p, status: resp.StatusCode, statusText: resp.Status, body: head}
	}
	return resp, nil
}

// call sends a request and decodes a 2xx JSON answer into out (nil: the
// body is dropped).
func (r *ComfyUIRunner) call(ctx context.Context, method, route, ctype string, body io.Reader, out any) error {
	resp, err := r.do(ctx, method, route, ctype, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxComfyAnswer))
		return nil
	}
	p, _, _ := strings.Cut(route, "?")
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxComfyAnswer)).Decode(out); err != nil {
		return fmt.Errorf("%w: %s %s: the answer is not the JSON ComfyUI sends: %v", ErrRunnerFailed, method, p, err)
	}
	return nil
}

func (r *ComfyUIRunner) postJSON(ctx context.Context, route string, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.call(ctx, http.MethodPost, route, "application/json", bytes.NewReader(js), nil)
}

// ComfySystemStats is ComfyUI's GET /system_stats answer (server.py
// system_stats), in part. Memory is in bytes.
type ComfySystemStats struct {
	System struct {
		OS             string `json:"os"`
		RAMTotal       uint64 `json:"ram_total"`
		RAMFree        uint64 `json:"ram_free"`
		ComfyUIVersion string `json:"comfyui_version"`
	} `json:"system"`
	Devices []ComfyDevice `json:"devices"`
}

// ComfyDevice is one of the devices ComfyUI's torch uses.
type ComfyDevice struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // "cuda", "cpu", "mps", …
	Index     *int   `json:"index"`
	VRAMTotal uint64 `json:"vram_total"`
	VRAMFree  uint64 `json:"vram_free"`
}

// UnmarshalJSON takes memory sizes written as integers or as floats
// (server.py passes on whatever the torch backend returned).
func (d *ComfyDevice) UnmarshalJSON(b []byte) error {
	type plain ComfyDevice
	var v struct {
		plain
		VRAMTotal float64 `json:"vram_total"`
		VRAMFree  float64 `json:"vram_free"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = ComfyDevice(v.plain)
	d.VRAMTotal, d.VRAMFree = uint64(max(v.VRAMTotal, 0)), uint64(max(v.VRAMFree, 0))
	return nil
}

// SystemStats asks the server for GET /system_stats.
func (r *ComfyUIRunner) SystemStats(ctx context.Context) (ComfySystemStats, error) {
	var st ComfySystemStats
	if err := r.Validate(); err != nil {
		return st, err
	}
	ctx, cancel := context.WithTimeout(ctx, comfyControlTimeout)
	defer cancel()
	if err := r.call(ctx, http.MethodGet, "/system_stats", "", nil, &st); err != nil {
		return st, fmt.Errorf("comfyui runner %s: %w", RedactURL(r.URL), err)
	}
	return st, nil
}

// Health reports whether the server answers GET /system_stats.
func (r *ComfyUIRunner) Health(ctx context.Context) error {
	_, err := r.SystemStats(ctx)
	return err
}

// VRAM is the GPU memory the server reports, in bytes, summed over its
// devices that are not the CPU; both are 0 for a server on the CPU.
func (r *ComfyUIRunner) VRAM(ctx context.Context) (total, free uint64, err error) {
	st, err := r.SystemStats(ctx)
	if err != nil {
		return 0, 0, err
	}
	total, free = st.VRAM()
	return total, free, nil
}

// VRAM sums the GPU memory of st's devices that are not the CPU.
func (st ComfySystemStats) VRAM() (total, free uint64) {
	for _, d := range st.Devices {
		if d.Type == "cpu" {
			continue
		}
		total += d.VRAMTotal
		free += d.VRAMFree
	}
	return total, free
}

// wsURL is the /ws address for a client id (server.py websocket_handler:
// the clientId query parameter names the session the prompt's messages
// go to).
func (r *ComfyUIRunner) wsURL(clientID string) (string, error) {
	u, err := url.Parse(r.endpoint("/ws"))
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.RawQuery = url.Values{"clientId": {clientID}}.Encode()
	return u.String(), nil
}
