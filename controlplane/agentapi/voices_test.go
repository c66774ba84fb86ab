package agentapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func TestRegisterCarriesVoices(t *testing.T) {
	e := newEnv(t)
	c := capacity("tts-1")
	c.Voices = []wire.Voice{
		{ID: "fr-fr", Name: "French (France)", Language: "fr-fr", Gender: "male"},
		{ID: "en-us+f3", Name: "English (America), Female 3", Language: "en-us", Gender: "female"},
	}
	r := e.registerAs("tts-1", c, "")
	want(t, r, http.StatusCreated, "")
	var reg wire.RegisterResponse
	if err := json.Unmarshal(r.body, &reg); err != nil {
		t.Fatal(err)
	}
	got := e.fsm.Voices()
	if len(got) != 2 || got[0] != (fsm.Voice{ID: "en-us+f3", Name: "English (America), Female 3", Language: "en-us", Gender: "female"}) ||
		got[1].ID != "fr-fr" {
		t.Fatalf("catalogue after registration: %+v", got)
	}

	// Registering again under the name without voices empties the catalogue.
	e.registerAgain("tts-1", reg.Credential)
	if got := e.fsm.Voices(); got != nil {
		t.Fatalf("catalogue after the node came back without voices: %+v", got)
	}
}

func TestRegisterRefusesMalformedVoices(t *testing.T) {
	e := newEnv(t)
	ok := wire.Voice{ID: "en-us", Name: "English (America)", Language: "en-us", Gender: "male"}
	many := make([]wire.Voice, wire.MaxVoices+1)
	for i := range many {
		many[i] = wire.Voice{ID: fmt.Sprintf("v%d", i), Name: "v", Language: "xx", Gender: "female"}
	}
	for name, voices := range map[string][]wire.Voice{
		"upper-case id":     {{ID: "EN-US", Name: "x", Language: "en-us", Gender: "male"}},
		"id with a space":   {{ID: "en us", Name: "x", Language: "en-us", Gender: "male"}},
		"option-like id":    {{ID: "-v", Name: "x", Language: "en-us", Gender: "male"}},
		"empty name":        {{ID: "en-us", Language: "en-us", Gender: "male"}},
		"control character": {{ID: "en-us", Name: "a\nb", Language: "en-us", Gender: "male"}},
		"long name":         {{ID: "en-us", Name: strings.Repeat("n", wire.MaxVoiceNameLen+1), Language: "en-us", Gender: "male"}},
		"bad language":      {{ID: "en-us", Name: "x", Language: "en_US", Gender: "male"}},
		"no gender":         {{ID: "en-us", Name: "x", Language: "en-us"}},
		"other gender":      {{ID: "en-us", Name: "x", Language: "en-us", Gender: "robot"}},
		"duplicate id":      {ok, ok},
		"too many":          many,
	} {
		c := capacity("tts-1")
		c.Voices = voices
		r := e.call("POST", "/agent/v1/register", agentToken, wire.RegisterRequest{Name: "tts-1", Capacity: c})
		want(t, r, http.StatusBadRequest, apierr.CodeInvalidRequest)
		if !contains(string(r.body), "capacity.voices") {
			t.Errorf("%s: refusal does not name capacity.voices: %s", name, r.body)
		}
	}
	if n := len(e.fsm.Nodes()); n != 0 || e.fsm.VoiceCount() != 0 {
		t.Fatalf("refused registrations left %d nodes, %d voices", n, e.fsm.VoiceCount())
	}
}
