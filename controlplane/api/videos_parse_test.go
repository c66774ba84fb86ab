package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/models"
)

// TestCreateVideoRefusesEmptyAndBlankValues: a field sent as "" is not a field
// left out. Where "" names nothing (a model, a resolution, an id), it is
// refused with what the client can send instead, and nothing is charged;
// a whitespace-only prompt is refused as blank, not as too short.
func TestCreateVideoRefusesEmptyAndBlankValues(t *testing.T) {
	e := newEnv(t)
	acct, key := e.account("pro", 100000)
	def, ok := models.Get(api.DefaultManualMdl)
	if !ok {
		t.Fatalf("default model %s not in the catalog", api.DefaultManualMdl)
	}
	for _, c := range []struct {
		name    string
		body    string
		code    string
		details map[string]any // each must be in details, with this JSON value
		absent  []string       // details keys that must not be there
		says    string         // part of the message
	}{
		// 1. "" for model, resolution, aspect_ratio.
		{
			name:    "empty model and resolution",
			body:    `{"mode":"manual","prompt":"x","model":"","resolution":""}`,
			code:    "unknown_model",
			details: map[string]any{"field": "model", "model": "", "existing_model_ids": models.IDs()},
			says:    "model must not be empty",
		},
		{
			name:    "empty model before an unknown resolution",
			body:    `{"mode":"manual","prompt":"x","model":"","resolution":"4k"}`,
			code:    "unknown_model",
			details: map[string]any{"field": "model", "existing_model_ids": models.IDs()},
		},
		{
			name:    "empty resolution and aspect ratio",
			body:    `{"mode":"manual","prompt":"x","model":"veo-3","resolution":"","aspect_ratio":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "resolution", "model": "veo-3", "allowed": []string{"720p", "1080p"}},
			says:    "leave it out for veo-3's default (720p)",
		},
		{
			name:    "empty aspect ratio",
			body:    `{"mode":"manual","prompt":"x","model":"veo-3","aspect_ratio":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "aspect_ratio", "model": "veo-3", "allowed": []string{"16:9", "9:16"}},
		},
		{
			name:    "empty resolution of the default model",
			body:    `{"mode":"manual","prompt":"x","resolution":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "resolution", "model": def.ID, "allowed": def.Resolutions},
		},

		// 2. style on a model without styles lists its styles: none.
		{
			name:    "style on veo-3",
			body:    `{"mode":"manual","prompt":"x","model":"veo-3","style":"anime"}`,
			code:    "invalid_request",
			details: map[string]any{"field": "style", "model": "veo-3", "allowed": []string{}},
			says:    "veo-3 takes no style",
		},
		{
			name:    "style on kling-2.1-master",
			body:    `{"mode":"manual","prompt":"x","model":"kling-2.1-master","style":"anime"}`,
			code:    "invalid_request",
			details: map[string]any{"field": "style", "model": "kling-2.1-master", "allowed": []string{}},
		},
		{
			name:    "empty style on a model with styles",
			body:    `{"mode":"manual","prompt":"x","model":"vidu-q1","style":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "style", "allowed": []string{"general", "anime"}},
		},
		{
			// A parameter the model does not take at all still lists the
			// parameters it does take.
			name:    "seed on kling-2.1-master",
			body:    `{"mode":"manual","prompt":"x","model":"kling-2.1-master","seed":1}`,
			code:    "invalid_request",
			details: map[string]any{"field": "seed", "allowed": []string{"negative_prompt", "cfg_scale"}},
		},
		{
			name:    "empty movement_amplitude",
			body:    `{"mode":"manual","prompt":"x","model":"vidu-q1","movement_amplitude":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "movement_amplitude", "allowed": models.MovementAmplitudes()},
		},

		// 3. blank and empty prompts.
		{
			name:    "whitespace prompt",
			body:    `{"mode":"manual","prompt":"   "}`,
			code:    "invalid_request",
			details: map[string]any{"field": "prompt", "reason": "blank"},
			absent:  []string{"min_length"},
			says:    "only whitespace",
		},
		{
			name:    "whitespace prompt, auto",
			body:    `{"mode":"auto","prompt":" \n\t "}`,
			code:    "invalid_request",
			details: map[string]any{"field": "prompt", "reason": "blank"},
			absent:  []string{"min_length"},
		},
		{
			name:    "empty prompt",
			body:    `{"mode":"auto","prompt":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "prompt", "min_length": 1},
			absent:  []string{"reason"},
			says:    "must not be empty",
		},

		// The auto ids: "" names nothing either.
		{
			name:    "empty avatar_id",
			body:    `{"mode":"auto","prompt":"x","avatar_id":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "avatar_id", "reason": "empty"},
			says:    "default presenter",
		},
		{
			name:    "empty voice_id",
			body:    `{"mode":"auto","prompt":"x","voice_id":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "voice_id", "reason": "empty"},
		},
		{
			name:    "empty brand_kit_id",
			body:    `{"mode":"auto","prompt":"x","brand_kit_id":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "brand_kit_id", "reason": "empty"},
		},
		{
			name:    "empty style_id",
			body:    `{"mode":"auto","prompt":"x","style_id":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "style_id", "reason": "empty"},
		},
		{
			name:    "empty orientation",
			body:    `{"mode":"auto","prompt":"x","orientation":""}`,
			code:    "invalid_request",
			details: map[string]any{"field": "orientation", "allowed": []string{"landscape", "portrait"}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.balance(acct)
			r := e.create(key, "", c.body)
			er := r.wantError(t, http.StatusBadRequest, c.code)
			d, _ := er["details"].(map[string]any)
			for k, want := range c.details {
				if got, want := jsonText(t, d[k]), jsonText(t, want); got != want {
					t.Errorf("details.%s = %s, want %s: %s", k, got, want, r.Body)
				}
			}
			for _, k := range c.absent {
				if _, ok := d[k]; ok {
					t.Errorf("details.%s is there: %s", k, r.Body)
				}
			}
			if msg, _ := er["message"].(string); !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
			if after := e.balance(acct); after != before {
				t.Errorf("refused request charged %d credits", before-after)
			}
		})
	}
}

// TestCreateVideoKeepsDefaultsOfAbsentFields: a field left out, or sent as
// null, still takes its default; "" stays accepted where it is documented to
// mean the default (name, folder_id) or is a value (negative_prompt).
func TestCreateVideoKeepsDefaultsOfAbsentFields(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 100000)
	def, _ := models.Get(api.DefaultManualMdl)
	veo, _ := models.Get("veo-3")
	for _, c := range []struct {
		name string
		body string
		want map[string]any // fields of the video
	}{
		{"no model", `{"mode":"manual","prompt":"x"}`, map[string]any{
			"model": def.ID, "resolution": def.DefaultResolution, "aspect_ratio": def.DefaultAspectRatio,
			"credits_charged": def.Credits(def.DefaultResolution, def.DefaultDuration)}},
		{"null model, resolution, aspect ratio", `{"mode":"manual","prompt":"x","model":null,"resolution":null,"aspect_ratio":null}`, map[string]any{
			"model": def.ID, "resolution": def.DefaultResolution, "aspect_ratio": def.DefaultAspectRatio}},
		{"veo-3 defaults", `{"mode":"manual","prompt":"x","model":"veo-3"}`, map[string]any{
			"model": "veo-3", "resolution": "720p", "aspect_ratio": "16:9",
			"credits_charged": veo.Credits("720p", veo.DefaultDuration)}},
		{"empty negative_prompt", `{"mode":"manual","prompt":"x","model":"veo-3","negative_prompt":""}`, map[string]any{"model": "veo-3"}},
		{"empty name and folder", `{"mode":"auto","prompt":"x","duration_seconds":5,"name":"","folder_id":""}`, map[string]any{
			"name": "", "folder_id": nil}},
		{"null ids", `{"mode":"auto","prompt":"x","duration_seconds":5,"avatar_id":null,"voice_id":null,"brand_kit_id":null,"style_id":null,"orientation":null}`,
			map[string]any{"orientation": "landscape"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := e.create(key, "", c.body).wantStatus(t, http.StatusCreated).json(t)
			for k, want := range c.want {
				if got, want := jsonText(t, v[k]), jsonText(t, want); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
		})
	}
}

// jsonText is v as JSON, so values decoded from a body compare with Go ones.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
