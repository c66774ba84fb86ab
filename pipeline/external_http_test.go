package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// runnerCall is what a test model server received.
type runnerCall struct {
	protocol string
	user     string
	req      ExternalRequest
	images   map[string][]byte
}

// readRunnerCall parses a runner request as a model server would.
func readRunnerCall(t *testing.T, r *http.Request) runnerCall {
	t.Helper()
	c := runnerCall{protocol: r.Header.Get("X-Vidfarm-Protocol"), images: map[string][]byte{}}
	c.user, _, _ = r.BasicAuth()
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		t.Errorf("multipart: %v", err)
		return c
	}
	if err := json.Unmarshal([]byte(r.FormValue("request")), &c.req); err != nil {
		t.Errorf("request part %q: %v", r.FormValue("request"), err)
	}
	for name, fhs := range r.MultipartForm.File {
		f, err := fhs[0].Open()
		if err != nil {
			t.Error(err)
			continue
		}
		c.images[name], _ = io.ReadAll(f)
		f.Close()
	}
	return c
}

func TestHTTPRunner(t *testing.T) {
	clip := bytes.Repeat([]byte("clip-bytes\n"), 5000) // newlines in the clip must not matter
	tests := []struct {
		name     string
		maxBytes int64
		answer   func(w http.ResponseWriter)
		want     error  // nil: success
		msg      string // in the error
		progress []int
	}{
		{"progress then clip", 0, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "loading weights\nprogress 10\nprogress 55.5\r\nclip %d\n", len(clip))
			w.Write(clip)
		}, nil, "", []int{0, 10, 55, 100}},
		{"the clip as the body", 0, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "video/mp4")
			w.Write(clip)
		}, nil, "", []int{0, 100}},
		{"error line", 0, func(w http.ResponseWriter) {
			fmt.Fprint(w, "progress 20\nerror CUDA out of memory (simulated)\n")
		}, ErrRunnerFailed, "CUDA out of memory (simulated)", nil},
		{"server error", 0, func(w http.ResponseWriter) {
			http.Error(w, "model not loaded", http.StatusServiceUnavailable)
		}, ErrRunnerFailed, "503 Service Unavailable: model not loaded", nil},
		{"no clip", 0, func(w http.ResponseWriter) {
			fmt.Fprint(w, "progress 20\nprogress 40\n")
		}, ErrNoOutput, "without a clip", nil},
		{"clip cut short", 0, func(w http.ResponseWriter) {
			fmt.Fprintf(w, "clip %d\n", len(clip))
			w.Write(clip[:100])
		}, ErrRunnerFailed, fmt.Sprintf("after 100 of the clip's %d bytes", len(clip)), nil},
		{"clip over the limit", 1000, func(w http.ResponseWriter) {
			fmt.Fprintf(w, "clip %d\n", len(clip))
			w.Write(clip)
		}, ErrRunnerFailed, "over the limit of 1000", nil},
		{"body over the limit", 1000, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(clip)
		}, ErrRunnerFailed, "over the limit of 1000", nil},
		{"bad clip line", 0, func(w http.ResponseWriter) { fmt.Fprint(w, "clip lots\n") }, ErrRunnerFailed, "bad clip line", nil},
		{"endless line", 0, func(w http.ResponseWriter) {
			w.Write(bytes.Repeat([]byte("x"), maxRunnerLine+10))
		}, ErrRunnerFailed, "over 65536 bytes", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(dir, "first.png")
			if err := os.WriteFile(img, []byte("png bytes"), 0o644); err != nil {
				t.Fatal(err)
			}
			calls := make(chan runnerCall, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls <- readRunnerCall(t, r)
				tc.answer(w)
			}))
			defer srv.Close()
			u := strings.Replace(srv.URL, "http://", "http://vidfarm:s3cret@", 1) + "/render"
			out := filepath.Join(dir, "clips", "clip.mp4")
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(out, []byte("stale"), 0o644); err != nil {
				t.Fatal(err)
			}
			var log progressLog
			req := RenderRequest{Model: "hunyuan-video", Operation: ImageToVideo, Prompt: "a prompt", Seed: 9,
				Resolution: "720p", AspectRatio: "9:16", DurationSeconds: 5, InputImages: []string{img}, OutputPath: out}
			r := &HTTPRunner{URL: u, MaxBytes: tc.maxBytes, GPUIDs: []string{"GPU-a", "GPU-b"}}
			err := r.Render(testCtx(t), req, log.fn)

			c := <-calls
			if c.protocol != ExternalProtocol || c.user != "vidfarm" {
				t.Errorf("protocol header %q, basic auth user %q", c.protocol, c.user)
			}
			want := ExternalRequest{Protocol: ExternalProtocol, Width: 720, Height: 1280, GPUIDs: []string{"GPU-a", "GPU-b"},
				RenderRequest: RenderRequest{Model: "hunyuan-video", Operation: ImageToVideo, Prompt: "a prompt", Seed: 9,
					Resolution: "720p", AspectRatio: "9:16", DurationSeconds: 5, FPS: DefaultFPS, InputImages: []string{"image-0"}}}
			if !reflect.DeepEqual(c.req, want) {
				t.Errorf("request\n got %+v\nwant %+v", c.req, want)
			}
			if string(c.images["image-0"]) != "png bytes" || len(c.images) != 1 {
				t.Errorf("images %q", c.images)
			}

			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(out)
				if !bytes.Equal(got, clip) {
					t.Fatalf("clip of %d bytes, want %d", len(got), len(clip))
				}
				if !reflect.DeepEqual(log.values(), tc.progress) {
					t.Errorf("progress %v, want %v", log.values(), tc.progress)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v with %q", err, tc.want, tc.msg)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
			if _, statErr := os.Stat(out); !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("a failed render left %s (stale or partial)", out)
			}
		})
	}
}

// TestHTTPRunnerCancel: cancelling the render closes the connection, and
// Render returns at once with the context's error.
func TestHTTPRunnerCancel(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "progress 30\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client hung up
		close(gone)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	req := RenderRequest{Model: "m", Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 2,
		OutputPath: filepath.Join(t.TempDir(), "clip.mp4")}
	done := make(chan error, 1)
	go func() {
		done <- (&HTTPRunner{URL: srv.URL}).Render(ctx, req, func(p int) {
			if p == 30 {
				cancel()
			}
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Render after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Render did not return after its context was cancelled")
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

func TestIsRunnerURL(t *testing.T) {
	for spec, want := range map[string]bool{
		"http://127.0.0.1:8188/render":     true,
		"https://models.internal/v1/wan":   true,
		"/opt/runners/wan.sh":              false,
		"wan.sh --fast":                    false,
		"ftp://host/x":                     false,
		"http:///no-host":                  false,
		"https://user:pw@gpu-7:9000/infer": true,
	} {
		if got := IsRunnerURL(spec); got != want {
			t.Errorf("IsRunnerURL(%q) = %v, want %v", spec, got, want)
		}
	}
	err := (&HTTPRunner{URL: "/opt/x.sh"}).Render(testCtx(t), RenderRequest{}, nil)
	if !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("Render with a path: %v", err)
	}
}

// TestHTTPRunnerTimeoutSaysWhy: a render its context's deadline stops,
// before the server answers or while it streams, fails with the context's
// cause (the runner's timeout), not "context deadline exceeded".
func TestHTTPRunnerTimeoutSaysWhy(t *testing.T) {
	for _, streams := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // the request read, the server notices a hang-up
			if streams {
				fmt.Fprint(w, "progress 30\n")
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done() // until the client hangs up
		}))
		cause := errors.New("runner wan: the task ran past its timeout of 200ms")
		ctx, cancel := context.WithTimeoutCause(testCtx(t), 200*time.Millisecond, cause)
		req := RenderRequest{Model: "m", Prompt: "p", Resolution: "480p", AspectRatio: "16:9", DurationSeconds: 2,
			OutputPath: filepath.Join(t.TempDir(), "clip.mp4")}
		err := (&HTTPRunner{URL: srv.URL}).Render(ctx, req, nil)
		cancel()
		srv.Close()
		if !errors.Is(err, cause) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), cause.Error()) {
			t.Errorf("streaming %v: Render = %v, want the runner's timeout", streams, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://vidfarm:s3cret@models.internal/render": "https://vidfarm:xxxxx@models.internal/render",
		"https://models.internal:8443/render?x=1":       "https://models.internal:8443/render?x=1",
		"https://":    "https://", // shown as typed, not "https:"
		"http://[::1": "http://[::1",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
