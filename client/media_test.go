package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// counter answers each path with the answers given, in order, then with the
// last, and counts the requests.
type counter struct {
	mu      sync.Mutex
	answers map[string][]int
	seen    map[string]int
	headers []http.Header
	bodies  [][]byte
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	k := r.Method + " " + r.URL.Path
	n := c.seen[k]
	c.seen[k]++
	c.headers = append(c.headers, r.Header.Clone())
	c.bodies = append(c.bodies, b)
	as := c.answers[k]
	c.mu.Unlock()
	status := http.StatusNotFound
	if len(as) > 0 {
		status = as[min(n, len(as)-1)]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch {
	case status == http.StatusNotFound:
		_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such thing","retryable":false,"request_id":"req_1"}}`)
		return
	case status >= 300:
		_, _ = io.WriteString(w, `{"error":{"code":"upstream_error","message":"try again","retryable":true,"request_id":"req_1"}}`)
		return
	}
	_, _ = io.WriteString(w, `{"object":"upload_receipt","size_bytes":4,"content_type":"image/png","id":"x"}`)
}

func newCounter(t *testing.T, answers map[string][]int) (*counter, *Client, string) {
	t.Helper()
	ct := &counter{answers: answers, seen: map[string]int{}}
	srv := httptest.NewServer(ct)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "vf_key", WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return ct, c, srv.URL
}

// TestMediaWriteRetries: the creates that record something are sent once,
// even on an answer marked retryable; the writes a repeat cannot harm are
// retried.
func TestMediaWriteRetries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		path  string
		call  func(c *Client) error
		sends int
	}{
		{"CreateAvatar", "POST /v1/avatars", func(c *Client) error {
			_, err := c.CreateAvatar(ctx, CreateAvatarRequest{Kind: AvatarKindPrompt, Prompt: "p"})
			return err
		}, 1},
		{"CreateSpeech", "POST /v1/voices/speech", func(c *Client) error {
			_, err := c.CreateSpeech(ctx, CreateSpeechRequest{Text: "t", VoiceID: "en"})
			return err
		}, 1},
		{"CreateBrandKit", "POST /v1/brand-kits", func(c *Client) error {
			_, err := c.CreateBrandKit(ctx, CreateBrandKitRequest{Name: "k"})
			return err
		}, 1},
		{"CreateAsset", "POST /v1/assets", func(c *Client) error {
			_, err := c.CreateAsset(ctx, CreateAssetRequest{Filename: "a.png", ContentType: "image/png", SizeBytes: 4})
			return err
		}, 1},
		{"CreateUpload", "POST /v1/uploads", func(c *Client) error {
			_, err := c.CreateUpload(ctx, CreateUploadRequest{Filename: "a.png", ContentType: "image/png"})
			return err
		}, 2},
		{"BrandKitFromURL", "POST /v1/brand-kits/from-url", func(c *Client) error {
			_, err := c.BrandKitFromURL(ctx, "https://example.com/")
			return err
		}, 2},
		{"CompleteAsset", "POST /v1/assets/as_1/complete", func(c *Client) error {
			_, err := c.CompleteAsset(ctx, "as_1")
			return err
		}, 2},
		{"DeleteAsset", "DELETE /v1/assets/as_1", func(c *Client) error {
			_, err := c.DeleteAsset(ctx, "as_1")
			return err
		}, 2},
		{"DeleteBrandKit", "DELETE /v1/brand-kits/br_1", func(c *Client) error {
			_, err := c.DeleteBrandKit(ctx, "br_1")
			return err
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, c, _ := newCounter(t, map[string][]int{tc.path: {503, 200}})
			err := tc.call(c)
			if got := ct.seen[tc.path]; got != tc.sends {
				t.Fatalf("%s sent %d times, want %d (err %v)", tc.path, got, tc.sends, err)
			}
			if tc.sends == 1 {
				var e *Error
				if !errors.As(err, &e) || e.Status != 503 || !e.Retryable {
					t.Fatalf("the one answer is the caller's to act on: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDeleteGoneOnRetry: a 404 to a delete's retry means the object is
// gone, as asked; a 404 to its first attempt is an error.
func TestDeleteGoneOnRetry(t *testing.T) {
	ctx := context.Background()
	_, c, _ := newCounter(t, map[string][]int{"DELETE /v1/assets/as_1": {503, 404}, "DELETE /v1/brand-kits/br_1": {404}})
	d, err := c.DeleteAsset(ctx, "as_1")
	if err != nil || *d != (Deleted{ID: "as_1", Object: "asset", Deleted: true}) {
		t.Fatalf("a 404 to the retry: %+v, %v", d, err)
	}
	if _, err := c.DeleteBrandKit(ctx, "br_1"); !IsCode(err, CodeNotFound) {
		t.Fatalf("a 404 to the first attempt: %v", err)
	}
}

// TestPutBytes: the bytes go to the upload address with its headers and
// without the API key; a body that can be rewound is sent again after a
// retryable answer, a stream is sent once; the caller's body is not closed.
func TestPutBytes(t *testing.T) {
	ctx := context.Background()
	img := []byte("\x89PNG")
	t.Run("seekable, retried", func(t *testing.T) {
		ct, c, base := newCounter(t, map[string][]int{"PUT /files/uploads/up_1.png": {503, 200}})
		up := &Upload{UploadURL: base + "/files/uploads/up_1.png?expires=1&signature=ab", ContentType: "image/png",
			UploadHeaders: map[string]string{"Content-Type": "image/png"}}
		body := &closeCounter{Reader: bytes.NewReader(img)}
		r, err := c.PutUploadBytes(ctx, up, body, int64(len(img)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Object != "upload_receipt" || r.SizeBytes != 4 || r.ContentType != "image/png" {
			t.Fatalf("receipt %+v", r)
		}
		if len(ct.bodies) != 2 || !bytes.Equal(ct.bodies[0], img) || !bytes.Equal(ct.bodies[1], img) {
			t.Fatalf("bodies sent %q", ct.bodies)
		}
		for _, h := range ct.headers {
			if h.Get("Authorization") != "" || h.Get("Content-Type") != "image/png" {
				t.Fatalf("PUT headers %v", h)
			}
		}
		if body.closed {
			t.Fatal("the caller's body was closed")
		}
	})
	t.Run("a stream, once", func(t *testing.T) {
		ct, c, base := newCounter(t, map[string][]int{"PUT /files/assets/as_1.png": {503, 200}})
		as := &CreatedAsset{Asset: Asset{ContentType: "image/png"}, UploadURL: base + "/files/assets/as_1.png?signature=ab",
			UploadHeaders: map[string]string{"Content-Type": "image/png"}}
		_, err := c.PutAssetBytes(ctx, as, io.MultiReader(bytes.NewReader(img)), -1)
		var e *Error
		if !errors.As(err, &e) || e.Status != 503 || len(ct.bodies) != 1 {
			t.Fatalf("a stream sent %d times: %v", len(ct.bodies), err)
		}
		if strings.Contains(err.Error(), "signature") {
			t.Fatalf("the error shows the signature: %v", err)
		}
	})
}

type closeCounter struct {
	*bytes.Reader
	closed bool
}

func (c *closeCounter) Close() error { c.closed = true; return nil }
