package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// goInternals are what a message must never show a customer: encoding/json's
// wording, which names Go types, and the packages behind the API.
var goInternals = []string{"Go value of type", "Go struct", "api.", "fsm.", "json:", "unmarshal", "ï"}

// TestMalformedBodies: every endpoint that takes a JSON body refuses a body
// that is not one JSON object in UTF-8 with the contract's envelope, a 400
// invalid_request whose message a person can act on, details, and nothing of
// Go in it. (An array answered "json: cannot unmarshal array into Go value
// of type api.object", with no details.)
func TestMalformedBodies(t *testing.T) {
	e := newEnv(t)
	_, key := e.account(fsm.PlanPro, 1000)
	bodies := []struct{ name, body, says string }{
		{"array", `[]`, "must be a JSON object"},
		{"array of the object", `[{"mode":"auto","prompt":"x"}]`, "not an array"},
		{"string", `"auto"`, "not a string"},
		{"number", `42`, "not a number"},
		{"null", `null`, "not null"},
		{"boolean", `true`, "not a boolean"},
		{"BOM before an array", "\xef\xbb\xbf[]", "not an array"},
		{"UTF-16", "\xff\xfe{\x00}\x00", "UTF-16"},
		{"truncated", `{"mode":"auto","prompt":"x`, "ends before its JSON value does"},
		{"stray byte", "{\"mode\":\xef}", "byte 0xEF"},
		{"missing colon", `{"mode" "auto"}`, "not valid JSON"},
		{"two objects", `{"a":1}{"a":1}`, "data after its JSON value"},
		{"invalid UTF-8 in a string", "{\"name\":\"caf\xe9\"}", "not valid UTF-8"},
		{"empty", ` `, "empty"},
	}
	for _, path := range []string{"/v1/videos", "/v1/folders", "/v1/assets", "/v1/webhooks",
		"/v1/avatars", "/v1/brand-kits", "/v1/voices/speech", "/v1/uploads"} {
		for _, b := range bodies {
			r := e.do(http.MethodPost, path, key, b.body)
			er := r.wantError(t, http.StatusBadRequest, "invalid_request")
			msg, _ := er["message"].(string)
			if !strings.Contains(msg, b.says) {
				t.Errorf("POST %s, %s: message %q, want it to say %q", path, b.name, msg, b.says)
			}
			if d, _ := er["details"].(map[string]any); len(d) == 0 {
				t.Errorf("POST %s, %s: no details: %s", path, b.name, r.Body)
			}
			for _, g := range goInternals {
				if strings.Contains(string(r.Body), g) {
					t.Errorf("POST %s, %s: the answer shows %q: %s", path, b.name, g, r.Body)
				}
			}
		}
	}
}

// TestBodyWithBOM: a UTF-8 byte-order mark before the object, which Windows
// tools write, is skipped (it answered "invalid character 'ï' …").
func TestBodyWithBOM(t *testing.T) {
	e := newEnv(t)
	_, key := e.account(fsm.PlanPro, 1000)
	e.do(http.MethodPost, "/v1/folders", key, "\xef\xbb\xbf{\"name\":\"Launch\"}").wantStatus(t, http.StatusCreated)
	v := e.create(key, "", "\xef\xbb\xbf\r\n{\"mode\":\"auto\",\"prompt\":\"a lighthouse\"}").wantStatus(t, http.StatusCreated).json(t)
	if v["prompt"] != "a lighthouse" {
		t.Errorf("prompt %v", v["prompt"])
	}
}

// TestDuplicateKeys: a key given twice is a 400 naming it, and nothing is
// created or charged (the last value won, silently).
func TestDuplicateKeys(t *testing.T) {
	e := newEnv(t)
	id, key := e.account(fsm.PlanPro, 1000)
	for _, body := range []string{
		`{"mode":"auto","prompt":"x","prompt":"y"}`,
		`{"mode":"auto","prompt":"x","pr\u006fmpt":"y"}`,
		`{"mode":"auto","prompt":null,"prompt":"y"}`,
	} {
		er := e.create(key, "", body).wantError(t, http.StatusBadRequest, "invalid_request")
		if d, _ := er["details"].(map[string]any); d["field"] != "prompt" || !strings.Contains(er["message"].(string), `"prompt" is given more than once`) {
			t.Errorf("%s: %v", body, er)
		}
	}
	er := e.do(http.MethodPost, "/v1/folders", key, `{"name":"a","name":"b"}`).wantError(t, http.StatusBadRequest, "invalid_request")
	if d, _ := er["details"].(map[string]any); d["field"] != "name" {
		t.Errorf("folder: %v", er)
	}
	if b := e.balance(id); b != 1000 {
		t.Errorf("balance %d after refused creates, want 1000", b)
	}
	if l := e.do(http.MethodGet, "/v1/videos", key, "").wantStatus(t, http.StatusOK).json(t); len(l["data"].([]any)) != 0 {
		t.Errorf("videos were created: %v", l["data"])
	}
}
