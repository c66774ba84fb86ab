package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/textguard"
)

// TestCreatesRefuseControlCharacters: free text a create stores is shown
// later on terminals, so a control character in it is refused with the
// field and where it is; names take none, long texts take newline and tab.
// Nothing is created or charged.
func TestCreatesRefuseControlCharacters(t *testing.T) {
	e := newEnv(t)
	acct, key := e.account(fsm.PlanPro, 100000)
	// JSON strings cannot hold raw control characters: a client sends them
	// escaped, as these bodies do.
	cases := []struct {
		name, path, body string
		field            string
		position         int
		character        string
	}{
		{"video name ESC (OSC retitle)", "/v1/videos", `{"mode":"auto","prompt":"p","name":"esc \u001b]0;PWNED\u0007"}`, "name", 5, "U+001B"},
		{"video name newline", "/v1/videos", `{"mode":"auto","prompt":"p","name":"two\nlines"}`, "name", 4, "U+000A"},
		{"video name tab", "/v1/videos", `{"mode":"auto","prompt":"p","name":"a\tb"}`, "name", 2, "U+0009"},
		{"video name C1 CSI", "/v1/videos", `{"mode":"auto","prompt":"p","name":"é\u009b31m"}`, "name", 2, "U+009B"},
		{"video name DEL", "/v1/videos", `{"mode":"auto","prompt":"p","name":"x\u007f"}`, "name", 2, "U+007F"},
		{"video name NUL", "/v1/videos", `{"mode":"auto","prompt":"p","name":"\u0000"}`, "name", 1, "U+0000"},
		{"video prompt ESC", "/v1/videos", `{"mode":"auto","prompt":"a fox\n\u001b[31mred"}`, "prompt", 7, "U+001B"},
		{"video prompt lone carriage return", "/v1/videos", `{"mode":"auto","prompt":"a fox\rin snow"}`, "prompt", 6, "U+000D"},
		{"manual prompt BEL", "/v1/videos", `{"mode":"manual","prompt":"ding\u0007"}`, "prompt", 5, "U+0007"},
		{"negative_prompt ESC", "/v1/videos", `{"mode":"manual","model":"kling-1.6-standard","prompt":"a fox","negative_prompt":"blur\u001b[2J"}`, "negative_prompt", 5, "U+001B"},
		{"folder name", "/v1/folders", `{"name":"Launch\u001b[8m"}`, "name", 7, "U+001B"},
		{"folder name newline", "/v1/folders", `{"name":"Launch\n"}`, "name", 7, "U+000A"},
		{"avatar name", "/v1/avatars", `{"kind":"prompt","prompt":"a presenter","name":"Ann\u009d0;x\u009c"}`, "name", 4, "U+009D"},
		{"avatar prompt", "/v1/avatars", `{"kind":"prompt","prompt":"a presenter\u001b]0;x\u0007"}`, "prompt", 12, "U+001B"},
		{"brand kit name", "/v1/brand-kits", `{"name":"Acme\u001b[5m"}`, "name", 5, "U+001B"},
		{"brand kit identity", "/v1/brand-kits", `{"name":"Acme","brand_identity":"bold\n\u0008"}`, "brand_identity", 6, "U+0008"},
		{"video name override (Trojan Source)", "/v1/videos", `{"mode":"auto","prompt":"p","name":"invoice_\u202efdp.exe"}`, "name", 9, "U+202E"},
		{"folder name isolate", "/v1/folders", `{"name":"Q3 \u2067report"}`, "name", 4, "U+2067"},
		{"speech text", "/v1/voices/speech", `{"text":"hello\u001b[1m","voice_id":"en-us"}`, "text", 6, "U+001B"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.balance(acct)
			er := e.do(http.MethodPost, c.path, key, c.body).wantError(t, http.StatusBadRequest, "invalid_request")
			d, _ := er["details"].(map[string]any)
			if d["field"] != c.field || d["position"] != float64(c.position) || d["character"] != c.character {
				t.Errorf("details %v, want field %s, position %d, character %s", d, c.field, c.position, c.character)
			}
			if msg, _ := er["message"].(string); !strings.Contains(msg, "control") || !strings.Contains(msg, c.character) || strings.ContainsFunc(msg, isControl) {
				t.Errorf("message %q should name the control character without echoing it", msg)
			}
			if after := e.balance(acct); after != before {
				t.Errorf("balance %d after a refused create, was %d", after, before)
			}
		})
	}
	if n := len(e.node.FSM.Folders(acct)); n != 0 {
		t.Errorf("%d folders created by refused requests", n)
	}
}

// TestCreatesAcceptLinesInLongTexts: a prompt, an avatar's description and a
// brand identity may have lines and tabs; names in any script pass.
func TestCreatesAcceptLinesInLongTexts(t *testing.T) {
	e := newEnv(t)
	_, key := e.account(fsm.PlanPro, 100000)
	for _, c := range []struct{ name, path, body string }{
		{"video prompt with lines", "/v1/videos", `{"mode":"auto","prompt":"Scene 1: a fox\n\tScene 2: snow","name":"Füchse im Schnee 🦊"}`},
		{"video prompt with Windows lines", "/v1/videos", `{"mode":"auto","prompt":"Scene 1: a fox\r\nScene 2: snow"}`},
		{"manual negative_prompt with lines", "/v1/videos", `{"mode":"manual","model":"kling-1.6-standard","prompt":"a fox\nrunning","negative_prompt":"blur\ntext"}`},
		{"avatar prompt with lines", "/v1/avatars", `{"kind":"prompt","prompt":"a presenter\nin a blue suit","name":"Анна"}`},
		{"brand identity with lines", "/v1/brand-kits", `{"name":"Acme 株式会社","brand_identity":"bold\n\tfriendly"}`},
		{"folder in any script", "/v1/folders", `{"name":"Été 2025"}`},
		{"right-to-left name with marks, prompt with an embedding", "/v1/videos", `{"mode":"auto","prompt":"\u202bمرحبا\u202c world","name":"שלום\u200f world"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.do(http.MethodPost, c.path, key, c.body).wantStatus(t, http.StatusCreated)
		})
	}
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f || textguard.Bidi(r) }
