package api_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// createSeeds are valid bodies of both modes and the edges around them.
var createSeeds = []string{
	`{"mode":"auto","prompt":"a lighthouse at dusk"}`,
	`{"mode":"auto","prompt":"p","duration_seconds":5,"orientation":"portrait","avatar_id":"av_stock_ben","voice_id":"en-us","brand_kit_id":"br_1","style_id":"s","file_asset_ids":["as_1"],"name":"n"}`,
	`{"mode":"auto","prompt":"p","duration_seconds":300}`,
	`{"mode":"auto","prompt":"p","duration_seconds":301}`,
	`{"mode":"auto","prompt":"p","duration_seconds":4}`,
	`{"mode":"auto","prompt":"p","duration_seconds":0}`,
	`{"mode":"auto","prompt":"p","duration_seconds":-9223372036854775808}`,
	`{"mode":"auto","prompt":"p","duration_seconds":9223372036854775807}`,
	`{"mode":"auto","prompt":"p","duration_seconds":1e400}`,
	`{"mode":"auto","prompt":"p","duration_seconds":5.0}`,
	`{"mode":"auto","prompt":"p","duration_seconds":5.5}`,
	`{"mode":"auto","prompt":"p","duration_seconds":"10"}`,
	`{"mode":"auto","prompt":"p","duration_seconds":null}`,
	`{"mode":"auto","prompt":"p","brand_kit_id":"nope"}`,
	`{"mode":"auto","prompt":"p","orientation":"diagonal"}`,
	`{"mode":"auto","prompt":"p","file_asset_ids":[""]}`,
	`{"mode":"auto","prompt":"p","folder_id":"fld_missing"}`,
	`{"mode":"auto","prompt":"p","model":"wan-2.2-a14b"}`,
	`{"mode":"manual","prompt":"a fox running"}`,
	`{"mode":"manual","prompt":"a fox","model":"wan-2.2-a14b","resolution":"480p","duration_seconds":5,"aspect_ratio":"16:9","seed":7,"negative_prompt":"blur","auto_fix":true}`,
	`{"mode":"manual","prompt":"a fox","model":"wan-2.5-preview","resolution":"1080p","duration_seconds":10,"generate_audio":true}`,
	`{"mode":"manual","prompt":"a fox","model":"wan-2.2-a14b","resolution":"4k"}`,
	`{"mode":"manual","prompt":"a fox","model":"no-such-model"}`,
	`{"mode":"manual","prompt":"a fox","image_url":"https://example.com/a.png"}`,
	`{"mode":"manual","prompt":"a fox","image_url":"http://127.0.0.1/a.png"}`,
	`{"mode":"manual","prompt":"a fox","image_url":"https://[::1]/a.png"}`,
	`{"mode":"manual","prompt":"a fox","first_frame_url":"https://example.com/a.png","last_frame_url":"https://example.com/b.png"}`,
	`{"mode":"manual","prompt":"a fox","first_frame_url":"https://example.com/a.png"}`,
	`{"mode":"manual","prompt":"a fox","image_urls":["https://example.com/a.png","https://example.com/b.png"]}`,
	`{"mode":"manual","prompt":"a fox","image_urls":[]}`,
	`{"mode":"manual","prompt":"a fox","image_url":"https://example.com/a.png","image_urls":["https://example.com/b.png"]}`,
	`{"mode":"manual","prompt":"a fox","cfg_scale":1e308,"seed":-1,"style":"anime","movement_amplitude":"large","camera_fixed":false}`,
	`{"mode":"manual","prompt":"a fox","orientation":"portrait"}`,
	`{"mode":"manual","prompt":"a fox","model":"","resolution":"","aspect_ratio":""}`,
	`{"mode":"manual","prompt":"a fox","model":"veo-3","style":"anime"}`,
	`{"mode":"auto","prompt":"p","avatar_id":"","voice_id":"","brand_kit_id":"","style_id":""}`,
	`{"mode":"Auto","prompt":"p"}`,
	`{"mode":"auto"}`,
	`{"mode":"auto","prompt":""}`,
	`{"mode":"auto","prompt":"   "}`,
	`{"mode":"auto","prompt":"` + strings.Repeat("é", 5000) + `"}`,
	`{"mode":"auto","prompt":"` + strings.Repeat("x", 5001) + `"}`,
	`{"mode":"auto","prompt":"\u0000\ud800"}`,
	`{"mode":"auto","prompt":"p","mode":"manual"}`,
	`{"mode":"auto","prompt":"p","extra":{"nested":[1,2,{"x":null}]}}`,
	`{"mode":"auto","prompt":"p"} {"mode":"auto","prompt":"p"}`,
	`{"mode":"auto","prompt":"p"`,
	`[{"mode":"auto","prompt":"p"}]`,
	`{}`, `[]`, `null`, `true`, `"auto"`, `0`, ``, ` `, "\xff\xfe",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

// errorStatus is the HTTP status each error code may come with on this endpoint.
var errorStatus = map[string]int{
	"invalid_request": 400, "unknown_model": 400, "invalid_url": 400,
	"insufficient_credits": 402, "free_limit_reached": 403, "upgrade_required": 403,
	"duplicate_request": 409, "idempotency_in_flight": 409, "payload_too_large": 413,
}

// validHeaderValue reports whether net/http will send v as a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func FuzzCreateVideo(f *testing.F) {
	for i, s := range createSeeds {
		idem := ""
		if i%3 == 1 {
			idem = "seed-key"
		}
		f.Add([]byte(s), idem, i%7 == 3)
	}
	e := newEnv(f, func(c *envConfig) { c.noSync = true })
	proID, proKey := e.account(fsm.PlanPro, 1000)
	freeID, freeKey := e.account(fsm.PlanFree, 0)
	ctx := context.Background()
	// Inside the target only t may report, so the balance is read without e's helpers.
	balance := func(t *testing.T, id string) int64 {
		a, ok := e.node.FSM.Account(id)
		if !ok {
			t.Fatalf("account %s missing", id)
		}
		return a.Credits
	}

	f.Fuzz(func(t *testing.T, body []byte, idem string, free bool) {
		if !validHeaderValue(idem) {
			t.Skip("not a header value an HTTP client can send")
		}
		acct, key := proID, proKey
		if free {
			acct, key = freeID, freeKey
		}
		if balance(t, proID) < 500 {
			if _, err := e.node.Apply(ctx, &fsm.GrantCredits{AccountID: proID, Amount: 1000}); err != nil {
				t.Fatal(err)
			}
		}
		before := balance(t, acct)
		headers := []string{}
		if idem != "" {
			headers = append(headers, "Idempotency-Key", idem)
		}
		r := e.send(http.MethodPost, "/v1/videos", key, string(body), headers...)
		if r.Err != nil {
			t.Fatalf("request failed (server down?): %v", r.Err)
		}
		after := balance(t, acct)
		if after < 0 {
			t.Fatalf("balance went negative: %d", after)
		}
		if r.Status >= 500 {
			t.Fatalf("status %d for body %q: %s", r.Status, body, r.Body)
		}
		reqID := r.Header.Get("X-Request-Id")
		if !strings.HasPrefix(reqID, "req_") {
			t.Fatalf("X-Request-Id %q", reqID)
		}
		if r.Status == http.StatusCreated {
			checkVideo(t, r, free)
			charged := int64(r.json(t)["credits_charged"].(float64))
			spent := before - after
			if r.Header.Get("Idempotent-Replayed") == "true" {
				charged = 0
			}
			if spent != charged {
				t.Fatalf("balance moved by %d for a 201 that says %d charged: %s", spent, charged, r.Body)
			}
			return
		}
		if after != before {
			t.Fatalf("a %d answer moved the balance from %d to %d: %s", r.Status, before, after, r.Body)
		}
		er := r.errorOf(t)
		code, _ := er["code"].(string)
		want, known := errorStatus[code]
		if !known || want != r.Status {
			t.Fatalf("status %d with code %q (want %d): %s", r.Status, code, want, r.Body)
		}
		if msg, _ := er["message"].(string); msg == "" {
			t.Fatalf("error without a message: %s", r.Body)
		}
		if _, ok := er["retryable"].(bool); !ok {
			t.Fatalf("error without retryable: %s", r.Body)
		}
		if er["request_id"] != reqID {
			t.Fatalf("request_id %v, header %q", er["request_id"], reqID)
		}
	})
}

// checkVideo checks a 201 body is the contract's video object.
func checkVideo(t *testing.T, r response, free bool) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("201 body is not a JSON object: %s", r.Body)
	}
	id, _ := v["id"].(string)
	if !strings.HasPrefix(id, "vid_") || v["object"] != "video" || r.Header.Get("Location") != "/v1/videos/"+id {
		t.Fatalf("201 without a video id, object or Location: %s", r.Body)
	}
	mode, _ := v["mode"].(string)
	if mode != "auto" && mode != "manual" {
		t.Fatalf("mode %q: %s", mode, r.Body)
	}
	if m, _ := v["model"].(string); mode == "manual" && m == "" {
		t.Fatalf("manual video without a model: %s", r.Body)
	}
	charged, ok := v["credits_charged"].(float64)
	if !ok || charged < 0 || charged != math.Trunc(charged) {
		t.Fatalf("credits_charged %v: %s", v["credits_charged"], r.Body)
	}
	if v["poll_interval_seconds"] != float64(5) {
		t.Fatalf("poll_interval_seconds %v", v["poll_interval_seconds"])
	}
	switch v["status"] {
	case "queued":
		if free {
			t.Fatalf("a free account's video is queued: %s", r.Body)
		}
		if p, ok := v["progress"].(map[string]any); !ok || p["queue_position"].(float64) < 1 {
			t.Fatalf("queued video without a queue position: %s", r.Body)
		}
	case "preview":
		p, ok := v["preview"].(map[string]any)
		if !free || !ok || charged != 0 || p["image_url"] == "" || p["upgrade_url"] == "" {
			t.Fatalf("bad preview: %s", r.Body)
		}
	default:
		t.Fatalf("a new video with status %v: %s", v["status"], r.Body)
	}
}
