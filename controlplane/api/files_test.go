package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// GET /files/<key> serves blobs behind signed URLs, with ranges and types.
func TestSignedFiles(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"videos/vid_1/finalize/video.mp4":     "video/mp4",
		"videos/vid_1/composite/captions.vtt": "text/vtt; charset=utf-8",
		"videos/vid_1/composite/captions.srt": "application/x-subrip",
		"videos/vid_1/finalize/poster.jpg":    "image/jpeg",
		"videos/vid_1/plan/plan.json":         "application/json",
	}
	for key := range files {
		if _, err := store.Put(ctx, key, strings.NewReader("0123456789 contents of "+key)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(nil)
	signer := blob.Signer{Key: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://" + srv.Listener.Addr().String()}
	a, err := api.New(api.Config{FSM: fsm.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Limits: api.Limits{Disabled: true}, Signer: signer, Blobs: store})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv.Config.Handler = a
	srv.Start()
	defer srv.Close()

	get := func(url string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	exp := time.Now().Add(time.Hour)
	for key, ctype := range files {
		res, body := get(signer.URL("/files/"+key, exp))
		if res.StatusCode != http.StatusOK || body != "0123456789 contents of "+key || res.Header.Get("Content-Type") != ctype {
			t.Errorf("GET %s: %d %q %q", key, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	}
	video := "/files/videos/vid_1/finalize/video.mp4"
	res, body := get(signer.URL(video, exp), "Range", "bytes=2-5")
	if res.StatusCode != http.StatusPartialContent || body != "2345" || res.Header.Get("Content-Range") == "" {
		t.Fatalf("range request: %d %q", res.StatusCode, body)
	}
	refused := map[string]string{
		"unsigned":           signer.BaseURL + video,
		"expired":            signer.URL(video, time.Now().Add(-time.Minute)),
		"signed for another": strings.Replace(signer.URL("/files/videos/vid_1/finalize/poster.jpg", exp), "poster.jpg", "video.mp4", 1),
	}
	for name, url := range refused {
		if res, body := get(url); res.StatusCode != http.StatusForbidden || !strings.Contains(body, `"request_id"`) {
			t.Errorf("%s: %d %s", name, res.StatusCode, body)
		}
	}
	for _, key := range []string{"videos/vid_1/finalize/missing.mp4", "videos/vid_1", "videos/../blob.key"} {
		if res, body := get(signer.URL("/files/"+key, exp)); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"not_found"`) {
			t.Errorf("GET %s: %d %s", key, res.StatusCode, body)
		}
	}
}
