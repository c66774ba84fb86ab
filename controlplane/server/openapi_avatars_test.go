package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// mediaScenario runs the avatar and speech exchanges on a node of their own
// (no videos queued ahead of them): a node with voices is registered and
// does not lease, so speech answers 202 and avatars stay pending until the
// scenario plays a render node.
func mediaScenario(t *testing.T, o *oas) {
	t.Helper()
	h := start(t, withAgent(30*time.Second), withSpeechWait(time.Millisecond))
	_, key := h.account("pro", 0)
	h.registerVoiceNode("tts-1", testVoices...)
	// The leader switches routing on at a job's tick; waiting for it makes
	// the sample below routed by its voice in every run, not only in those
	// where the tick came first.
	eventually(t, h.srv.Node.FSM.RoutingOn, "the leader to switch routing on")
	o.run(h, exchange{name: "avatars", method: "GET", path: "/v1/avatars", key: key, status: 200, template: "/v1/avatars"})
	o.run(h, exchange{name: "avatars, filtered", method: "GET", path: "/v1/avatars?view=catalogue&gender=female&search=a&limit=2", key: key,
		status: 200, template: "/v1/avatars"})
	for q, req := range map[string]reqCheck{"view=all": reqInvalid, "limit=101": reqInvalid, "gender=x": reqInvalid, "colour=red": reqInvalid} {
		o.run(h, exchange{name: "avatars?" + q, method: "GET", path: "/v1/avatars?" + q, key: key, req: req,
			status: 400, code: "invalid_request", template: "/v1/avatars"})
	}
	av := o.run(h, exchange{name: "create prompt avatar", method: "POST", path: "/v1/avatars", key: key,
		body: []byte(`{"kind":"prompt","prompt":"a woman in a green coat","name":"Greta","gender":"female"}`), status: 201, template: "/v1/avatars"})
	o.run(h, exchange{name: "create photo avatar", method: "POST", path: "/v1/avatars", key: key,
		body: []byte(`{"kind":"photo","file_url":"https://img.example.com/me.jpg","consent":true}`), status: 201, template: "/v1/avatars"})
	o.run(h, exchange{name: "photo avatar without consent", method: "POST", path: "/v1/avatars", key: key,
		body: []byte(`{"kind":"photo","file_url":"https://img.example.com/me.jpg"}`), status: 400, code: "invalid_request", template: "/v1/avatars"})
	o.run(h, exchange{name: "photo avatar on loopback", method: "POST", path: "/v1/avatars", key: key,
		body: []byte(`{"kind":"photo","file_url":"https://127.0.0.1/me.jpg","consent":true}`), status: 400, code: "invalid_url", template: "/v1/avatars"})
	o.run(h, exchange{name: "avatar of no kind", method: "POST", path: "/v1/avatars", key: key, req: reqInvalid,
		body: []byte(`{"prompt":"x"}`), status: 400, code: "invalid_request", template: "/v1/avatars"})
	o.run(h, exchange{name: "pending avatar", method: "GET", path: "/v1/avatars/" + av["id"].(string), key: key, status: 200, template: "/v1/avatars/{id}"})
	o.run(h, exchange{name: "stock avatar", method: "GET", path: "/v1/avatars/av_stock_eli", key: key, status: 200, template: "/v1/avatars/{id}"})
	o.run(h, exchange{name: "no such avatar", method: "GET", path: "/v1/avatars/av_nobody", key: key, status: 404, code: "not_found", template: "/v1/avatars/{id}"})

	sp := o.run(h, exchange{name: "speech, waiting for a node", method: "POST", path: "/v1/voices/speech", key: key,
		body: []byte(`{"text":"Hello there.","voice_id":"en-us"}`), status: 202, template: "/v1/voices/speech"})
	o.run(h, exchange{name: "speech, 301 characters", method: "POST", path: "/v1/voices/speech", key: key, req: reqInvalid,
		body: []byte(`{"text":"` + strings.Repeat("a", 301) + `","voice_id":"en-us"}`), status: 400, code: "invalid_request", template: "/v1/voices/speech"})
	o.run(h, exchange{name: "speech, unknown voice", method: "POST", path: "/v1/voices/speech", key: key,
		body: []byte(`{"text":"Hello.","voice_id":"xx-yy"}`), status: 400, code: "invalid_request", template: "/v1/voices/speech"})
	o.run(h, exchange{name: "queued speech", method: "GET", path: "/v1/voices/speech/" + sp["id"].(string), key: key, status: 200, template: "/v1/voices/speech/{id}"})
	o.run(h, exchange{name: "no such speech", method: "GET", path: "/v1/voices/speech/sp_nothing", key: key, status: 404, code: "not_found", template: "/v1/voices/speech/{id}"})

	// The node speaks the sample and makes both avatars: the finished shapes.
	// It offers the sample's voice: once the leader has switched routing on
	// (a job's tick, which on a loaded machine can come before the sample),
	// a sample goes only to a node with its voice.
	cred := h.registerNode("media-1", testVoices...)
	for range 3 {
		a := h.leaseTask(cred, 5)
		a.Video.DurationSeconds = 2
		switch a.Kind {
		case scheduler.KindSpeech:
			h.runTask(cred, a, wire.ArtifactSpeech)
		case scheduler.KindAvatar:
			h.runTask(cred, a, wire.ArtifactAvatar)
		default:
			t.Fatalf("leased %s; want the media jobs first", a.TaskID)
		}
	}
	o.run(h, exchange{name: "spoken speech", method: "GET", path: "/v1/voices/speech/" + sp["id"].(string), key: key, status: 200, template: "/v1/voices/speech/{id}"})
	o.run(h, exchange{name: "ready avatar", method: "GET", path: "/v1/avatars/" + av["id"].(string), key: key, status: 200, template: "/v1/avatars/{id}"})
	o.run(h, exchange{name: "avatars, own ready", method: "GET", path: "/v1/avatars?view=characters", key: key, status: 200, template: "/v1/avatars"})
}
