package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// A real video rendered by a real agent ends completed, and its signed
// video.completed event reaches a receiver registered through the API.
func TestE2EWebhookOnCompletion(t *testing.T) {
	f := newE2EFarm(t, 100)
	if len(findLogs(f.srv, "DEVELOPMENT SWITCH --dev-allow-private-webhooks IS ON: webhooks may target plain http and private, loopback and link-local addresses, so any API client can make this server send requests into its own network; never use this on a public farm")) != 1 {
		t.Fatal("the development switch was not announced with a warning")
	}
	type got struct {
		header string
		body   []byte
	}
	var mu sync.Mutex
	var received []got
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.Header.Get(signature.HeaderName), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	reg := f.srv.must(http.StatusCreated, http.MethodPost, "/v1/webhooks", f.apiKey, `{"url":"`+rc.URL+`/hooks"}`).obj(t)
	secret, _ := reg["secret"].(string)

	f.startAgent("agent-1")
	id := f.createVideo(manualBody("a lighthouse beam sweeping over the sea", ""))["id"].(string)
	done := f.waitStatus(id, "completed", 3*time.Minute)

	eventually(t, 30*time.Second, "the video.completed event to arrive", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) > 0
	})
	mu.Lock()
	first := received[0]
	mu.Unlock()
	if err := signature.Verify(secret, first.header, first.body, time.Now(), signature.DefaultTolerance); err != nil {
		t.Fatalf("the delivery's signature: %v", err)
	}
	var ev struct {
		ID, Object, Type string
		Created          int64
		Data             struct{ Video map[string]any }
	}
	if err := json.Unmarshal(first.body, &ev); err != nil {
		t.Fatal(err)
	}
	v := ev.Data.Video
	if !strings.HasPrefix(ev.ID, "evt_") || ev.Object != "event" || ev.Type != "video.completed" || ev.Created == 0 ||
		v["id"] != id || v["status"] != "completed" || v["duration_seconds"] != done["duration_seconds"] {
		t.Fatalf("event %s for video %v", first.body, done)
	}
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "from-webhook.mp4"), num(done, "duration_seconds"), fw, fh, false)
}
