package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func withSpeechWait(d time.Duration) option { return func(c *server.Config) { c.SpeechWait = d } }

// asyncAnswer is the answer to a request sent by postAsync.
type asyncAnswer struct {
	status int
	body   map[string]any
	err    error
}

// postAsync POSTs body in the background, for a request that waits on what
// the test does next; the answer arrives on the channel.
func (h *harness) postAsync(path, key, body string) <-chan asyncAnswer {
	done := make(chan asyncAnswer, 1)
	go func() { // h.do may not fail the test from here
		req, _ := http.NewRequest("POST", h.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- asyncAnswer{err: err}
			return
		}
		defer res.Body.Close()
		var m map[string]any
		err = json.NewDecoder(res.Body).Decode(&m)
		done <- asyncAnswer{res.StatusCode, m, err}
	}()
	return done
}

func speechReq(text, voice string) map[string]any {
	return map[string]any{"text": text, "voice_id": voice}
}

func TestSpeechValidation(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 0)
	e := expectAPIError(t, h.do("POST", "/v1/voices/speech", key, speechReq("hello", "en-us")), http.StatusServiceUnavailable, "upstream_error")
	if e["retryable"] != true {
		t.Fatalf("no voices yet: %v", e)
	}
	h.registerVoiceNode("tts", testVoices...)
	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"301 characters": {speechReq(strings.Repeat("a", 301), "en-us"), "text"},
		"301 runes":      {speechReq(strings.Repeat("é", 301), "en-us"), "text"},
		"no text":        {map[string]any{"voice_id": "en-us"}, "text"},
		"blank text":     {speechReq("  \n ", "en-us"), "text"},
		"text not text":  {map[string]any{"text": 5, "voice_id": "en-us"}, "text"},
		"no voice":       {map[string]any{"text": "hello"}, "voice_id"},
		"unknown voice":  {speechReq("hello", "en-xx"), "voice_id"},
		"unknown field":  {map[string]any{"text": "hello", "voice_id": "en-us", "speed": 2}, "speed"},
	} {
		t.Run(name, func(t *testing.T) {
			e := expectAPIError(t, h.do("POST", "/v1/voices/speech", key, tc.body), http.StatusBadRequest, "invalid_request")
			d := errDetails(t, e)
			if d["field"] != tc.field {
				t.Fatalf("details.field %v, want %s: %v", d["field"], tc.field, e)
			}
			if tc.field == "voice_id" && d["hint"] == nil {
				t.Fatalf("a voice refusal says where the voices are: %v", e)
			}
		})
	}
	d := errDetails(t, expectAPIError(t, h.do("POST", "/v1/voices/speech", key, speechReq("hello", "EN_GB")), http.StatusBadRequest, "invalid_request"))
	if s, _ := d["suggestions"].([]any); len(s) == 0 || s[0] != "en-gb" {
		t.Fatalf("suggestions for EN_GB: %v", d)
	}
	if r := h.do("GET", "/v1/voices/speech/sp_nothing", key, nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown sample: %d %s", r.Status, r.Body)
	}
}

// A request that outlasts the wait gets 202 and the sample to poll; the node
// then speaks it and the poll finds the audio at a signed URL.
func TestSpeechPolledAfterTheWait(t *testing.T) {
	h := start(t, withAgent(30*time.Second), withSpeechWait(time.Millisecond))
	_, key := h.account("pro", 0)
	_, otherKey := h.account("pro", 0)
	h.registerVoiceNode("tts", testVoices...)
	cred := h.registerNode("cpu-1", testVoices...) // espeak-ng and the voices: it takes speech tasks, routed or not
	r := h.do("POST", "/v1/voices/speech", key, speechReq("Hello from the farm.", "en-us+f3"))
	if r.Status != http.StatusAccepted {
		t.Fatalf("speech with nobody to speak it: %d %s", r.Status, r.Body)
	}
	sp := r.json(t)
	id := sp["id"].(string)
	if !strings.HasPrefix(id, "sp_") || sp["status"] != "queued" || sp["audio_url"] != nil || r.Header.Get("Location") != "/v1/voices/speech/"+id {
		t.Fatalf("accepted sample %v (Location %q)", sp, r.Header.Get("Location"))
	}
	expectAPIError(t, h.do("GET", "/v1/voices/speech/"+id, otherKey, nil), http.StatusNotFound, "not_found")

	a := h.leaseTask(cred, 5)
	if a.Kind != scheduler.KindSpeech || a.Video.ID != id || a.Speech == nil || *a.Speech != (wire.SpeechJob{Text: "Hello from the farm.", VoiceID: "en-us+f3"}) {
		t.Fatalf("speech task %+v (job %+v)", a, a.Speech)
	}
	if got := h.do("GET", "/v1/voices/speech/"+id, key, nil).json(t); got["status"] != "processing" {
		t.Fatalf("leased sample: %v", got)
	}
	a.Video.DurationSeconds = 2 // runTask reports it as the measured length
	h.runTask(cred, a, wire.ArtifactSpeech)
	done := h.do("GET", "/v1/voices/speech/"+id, key, nil).json(t)
	audioURL, _ := done["audio_url"].(string)
	if done["status"] != "completed" || audioURL == "" || done["duration_seconds"] != float64(2) {
		t.Fatalf("spoken sample: %v", done)
	}
	checkFile(t, audioURL, "audio/mp4", "bytes of videos/"+id+"/speech/speech.m4a")
}

// A node speaks the sample while the request waits: the answer is 200 with
// the audio.
func TestSpeechAnsweredWhenSpoken(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 0)
	h.registerVoiceNode("tts", testVoices...)
	cred := h.registerNode("cpu-1", testVoices...)
	done := h.postAsync("/v1/voices/speech", key, `{"text":"Quick.","voice_id":"en-gb"}`)
	a := h.leaseTask(cred, 30)
	if a.Kind != scheduler.KindSpeech {
		t.Fatalf("leased %+v", a)
	}
	a.Video.DurationSeconds = 1
	h.runTask(cred, a, wire.ArtifactSpeech)
	got := <-done
	if got.err != nil || got.status != http.StatusOK {
		t.Fatalf("speech: %d %v %v", got.status, got.body, got.err)
	}
	if sp := got.body; sp["status"] != "completed" || sp["audio_url"] == nil || sp["voice_id"] != "en-gb" || sp["id"] != a.Video.ID {
		t.Fatalf("speech answer %v", sp)
	}
}
