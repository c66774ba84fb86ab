package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// failOnThreeNodes leases the next task on three fresh nodes in turn and
// fails it with reason each time: the third failure fails its job.
func failOnThreeNodes(h *harness, prefix, reason string) {
	h.t.Helper()
	for i := 1; i <= 3; i++ {
		// With the test voices: a speech job routed by its voice (routing
		// on) goes only to a node that offers it.
		cred := h.registerNode(fmt.Sprintf("%s-%d", prefix, i), testVoices...)
		a := h.leaseTask(cred, 10)
		r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(a.TaskID)+"/fail", cred, wire.FailRequest{Token: a.Token, Reason: reason})
		if r.Status != http.StatusNoContent {
			h.t.Fatalf("fail %s: %d %s", a.TaskID, r.Status, r.Body)
		}
	}
}

// A job that fails on three nodes fails with the node's reason: the avatar
// shows it in error.message and cannot present a video; a speech request
// still waiting answers 502 upstream_error naming the sample.
func TestMediaJobsFailWithTheirReason(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 100)
	id := h.do("POST", "/v1/avatars", key, photoAvatarReq()).json(t)["id"].(string)
	failOnThreeNodes(h, "av", "input image refused: images.example.com answered HTTP 404")
	av := h.do("GET", "/v1/avatars/"+id, key, nil).json(t)
	msg, _ := av["error"].(map[string]any)["message"].(string)
	if av["status"] != "failed" || !strings.Contains(msg, "answered HTTP 404") || av["image_url"] != nil {
		t.Fatalf("avatar after failing on three nodes: %v", av)
	}
	e := expectAPIError(t, h.do("POST", "/v1/videos", key, autoReq("avatar_id", id)), http.StatusBadRequest, "invalid_request")
	if d := errDetails(t, e); d["status"] != "failed" || !strings.Contains(fmt.Sprint(d["reason"]), "HTTP 404") {
		t.Fatalf("failed avatar as avatar_id: %v", e)
	}

	h.registerVoiceNode("tts", testVoices...)
	done := h.postAsync("/v1/voices/speech", key, `{"text":"Hello.","voice_id":"fr-fr"}`)
	failOnThreeNodes(h, "sp", "synthesize with voice fr-fr: pipeline: unknown voice")
	got := <-done
	if got.err != nil || got.status != http.StatusBadGateway {
		t.Fatalf("speech that failed: %d %v %v", got.status, got.body, got.err)
	}
	e = got.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if e["code"] != "upstream_error" || e["retryable"] != true || !strings.HasPrefix(fmt.Sprint(d["speech_id"]), "sp_") ||
		!strings.Contains(fmt.Sprint(d["reason"]), "unknown voice") {
		t.Fatalf("speech failure envelope: %v", got.body)
	}
	sp := h.do("GET", "/v1/voices/speech/"+d["speech_id"].(string), key, nil).json(t)
	if sp["status"] != "failed" || sp["error"] == nil || sp["audio_url"] != nil {
		t.Fatalf("failed sample polled: %v", sp)
	}
}
