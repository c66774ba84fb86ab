package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// testVoices are what a node with a small espeak-ng registers.
var testVoices = []wire.Voice{
	{ID: "en-gb", Name: "English (Great Britain)", Language: "en-gb", Gender: "male"},
	{ID: "en-us", Name: "English (America)", Language: "en-us", Gender: "male"},
	{ID: "en-us+f3", Name: "English (America), Female 3", Language: "en-us", Gender: "female"},
	{ID: "fr-fr", Name: "French (France)", Language: "fr-fr", Gender: "male"},
}

// registerVoiceNode registers a CPU node offering voices on the agent
// listener (the harness needs withAgent) and returns its credential.
func (h *harness) registerVoiceNode(name string, voices ...wire.Voice) string {
	h.t.Helper()
	r := h.agentCall("POST", "/agent/v1/register", testAgentToken, wire.RegisterRequest{Name: name,
		Capacity: wire.Capacity{Hostname: name, CPUSlots: 1, Tools: []string{"espeak-ng"}, Voices: voices}})
	if r.Status != http.StatusCreated {
		h.t.Fatalf("register %s: %d %s", name, r.Status, r.Body)
	}
	var reg wire.RegisterResponse
	_ = json.Unmarshal(r.Body, &reg)
	return reg.Credential
}

// voiceIDs lists the ids of GET path.
func (h *harness) voiceIDs(key, path string) []string {
	h.t.Helper()
	r := h.do("GET", path, key, nil)
	if r.Status != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		h.t.Fatal(err)
	}
	ids := []string{}
	for _, v := range list.Data {
		ids = append(ids, v.ID)
	}
	return ids
}

// The catalogue follows the nodes on the agent listener: a node's voices
// arrive with its registration and leave with its deregistration; while no
// node has voices, any voice_id is accepted.
func TestVoicesFollowRegisteredNodes(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 1000)
	auto := func(voice string) response {
		return h.do("POST", "/v1/videos", key, map[string]any{"mode": "auto", "prompt": "a lighthouse", "voice_id": voice})
	}
	if r := auto("xx-unknown"); r.Status != http.StatusCreated {
		t.Fatalf("voice_id with no catalogue: %d %s", r.Status, r.Body)
	}

	cred := h.registerVoiceNode("tts-a", testVoices[:2]...)
	h.registerVoiceNode("tts-b", testVoices[1:]...)
	if got := h.voiceIDs(key, "/v1/voices"); !slices.Equal(got, []string{"en-gb", "en-us", "en-us+f3", "fr-fr"}) {
		t.Fatalf("union of two nodes: %v", got)
	}
	e := expectAPIError(t, auto("xx-unknown"), http.StatusBadRequest, "invalid_request")
	if d := errDetails(t, e); d["field"] != "voice_id" || d["hint"] == nil {
		t.Fatalf("unknown voice: %v", e)
	}
	if r := auto("en-us+f3"); r.Status != http.StatusCreated {
		t.Fatalf("catalogued voice: %d %s", r.Status, r.Body)
	}

	if r := h.agentCall("POST", "/agent/v1/deregister", cred, nil); r.Status != http.StatusNoContent {
		t.Fatalf("deregister: %d %s", r.Status, r.Body)
	}
	if got := h.voiceIDs(key, "/v1/voices"); !slices.Equal(got, []string{"en-us", "en-us+f3", "fr-fr"}) {
		t.Fatalf("after tts-a left: %v", got)
	}
	expectAPIError(t, auto("en-gb"), http.StatusBadRequest, "invalid_request")

	// A malformed voice is refused at registration and registers nothing.
	r := h.agentCall("POST", "/agent/v1/register", testAgentToken, wire.RegisterRequest{Name: "bad",
		Capacity: wire.Capacity{CPUSlots: 1, Voices: []wire.Voice{{ID: "EN", Name: "x", Language: "en", Gender: "male"}}}})
	if r.Status != http.StatusBadRequest {
		t.Fatalf("malformed voice: %d %s", r.Status, r.Body)
	}
}
