package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/models"
)

// invalidCase is one POST /v1/videos body the API must refuse.
type invalidCase struct {
	name  string
	body  any
	code  string // default invalid_request
	field string // expected details.field; "" means not checked
	// allowed, when set, must equal details.allowed (compared as JSON).
	allowed any
}

func catalogModel(t *testing.T, id string) models.Model {
	t.Helper()
	m, ok := models.Get(id)
	if !ok {
		t.Fatalf("catalog has no model %q", id)
	}
	return m
}

// manual builds a manual-mode body with a prompt plus the given fields.
func manualReq(kv ...any) map[string]any {
	b := map[string]any{"mode": "manual", "prompt": "a red fox in the snow"}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

// auto builds an auto-mode body with a prompt plus the given fields.
func autoReq(kv ...any) map[string]any {
	b := map[string]any{"mode": "auto", "prompt": "explain how tides work"}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

const publicImg = "https://images.example.com/a.png"

// TestAPICreateValidation sends every kind of invalid create body and checks the
// error code, the field named in details.field and, for per-model rules, that
// details.allowed is the model's own list. Nothing refused may charge or create.
func TestAPICreateValidation(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 100000)

	vidu := catalogModel(t, "vidu-q2-pro")
	kling := catalogModel(t, "kling-2.1-master")
	pix := catalogModel(t, "pixverse-v4.5")
	veo := catalogModel(t, "veo-3")
	mochi := catalogModel(t, "mochi-1")

	cases := []invalidCase{
		// The body itself.
		{name: "empty body", body: ""},
		{name: "whitespace body", body: "  \n "},
		{name: "null body", body: "null"},
		{name: "array body", body: `[{"mode":"auto","prompt":"x"}]`},
		{name: "string body", body: `"auto"`},
		{name: "number body", body: `42`},
		{name: "trailing object", body: `{"mode":"auto","prompt":"x"} {"mode":"auto"}`},
		{name: "trailing garbage", body: `{"mode":"auto","prompt":"x"}garbage`},
		{name: "truncated JSON", body: `{"mode":"auto","prompt":"x"`},

		// mode.
		{name: "mode missing", body: map[string]any{"prompt": "x"}, field: "mode"},
		{name: "mode invalid", body: map[string]any{"mode": "turbo", "prompt": "x"}, field: "mode"},
		{name: "mode empty", body: map[string]any{"mode": "", "prompt": "x"}, field: "mode"},
		{name: "mode upper case", body: map[string]any{"mode": "AUTO", "prompt": "x"}, field: "mode"},
		{name: "mode not a string", body: map[string]any{"mode": 1, "prompt": "x"}, field: "mode"},

		// prompt.
		{name: "prompt missing auto", body: map[string]any{"mode": "auto"}, field: "prompt"},
		{name: "prompt missing manual", body: map[string]any{"mode": "manual"}, field: "prompt"},
		{name: "prompt empty", body: autoReq("prompt", ""), field: "prompt"},
		{name: "prompt whitespace", body: autoReq("prompt", " \t\n "), field: "prompt"},
		{name: "prompt 5001 ascii", body: autoReq("prompt", strings.Repeat("a", 5001)), field: "prompt"},
		{name: "prompt 5001 multi-byte", body: manualReq("prompt", strings.Repeat("日", 5001)), field: "prompt"},
		{name: "prompt 5001 emoji", body: autoReq("prompt", strings.Repeat("🎬", 5001)), field: "prompt"},
		{name: "prompt a number", body: autoReq("prompt", 12), field: "prompt"},
		{name: "prompt an object", body: autoReq("prompt", map[string]any{"text": "x"}), field: "prompt"},

		// auto duration_seconds.
		{name: "auto duration 4", body: autoReq("duration_seconds", 4), field: "duration_seconds"},
		{name: "auto duration 0", body: autoReq("duration_seconds", 0), field: "duration_seconds"},
		{name: "auto duration negative", body: autoReq("duration_seconds", -5), field: "duration_seconds"},
		{name: "auto duration 301", body: autoReq("duration_seconds", 301), field: "duration_seconds"},
		{name: "auto duration huge", body: autoReq("duration_seconds", 1e12), field: "duration_seconds"},
		{name: "auto duration 5.5", body: `{"mode":"auto","prompt":"x","duration_seconds":5.5}`, field: "duration_seconds"},
		{name: "auto duration string", body: autoReq("duration_seconds", "30"), field: "duration_seconds"},
		{name: "auto duration bool", body: autoReq("duration_seconds", true), field: "duration_seconds"},

		// Fields of the other mode, and unknown fields.
		{name: "avatar_id with manual", body: manualReq("avatar_id", "av_1"), field: "avatar_id"},
		{name: "voice_id with manual", body: manualReq("voice_id", "v_1"), field: "voice_id"},
		{name: "brand_kit_id with manual", body: manualReq("brand_kit_id", "br_1"), field: "brand_kit_id"},
		{name: "style_id with manual", body: manualReq("style_id", "tpl_1"), field: "style_id"},
		{name: "file_asset_ids with manual", body: manualReq("file_asset_ids", []string{"a"}), field: "file_asset_ids"},
		{name: "orientation with manual", body: manualReq("orientation", "portrait"), field: "orientation"},
		{name: "model with auto", body: autoReq("model", "veo-3"), field: "model"},
		{name: "resolution with auto", body: autoReq("resolution", "720p"), field: "resolution"},
		{name: "aspect_ratio with auto", body: autoReq("aspect_ratio", "16:9"), field: "aspect_ratio"},
		{name: "image_url with auto", body: autoReq("image_url", publicImg), field: "image_url"},
		{name: "image_urls with auto", body: autoReq("image_urls", []string{publicImg}), field: "image_urls"},
		{name: "first_frame_url with auto", body: autoReq("first_frame_url", publicImg), field: "first_frame_url"},
		{name: "seed with auto", body: autoReq("seed", 1), field: "seed"},
		{name: "cfg_scale with auto", body: autoReq("cfg_scale", 0.5), field: "cfg_scale"},
		{name: "negative_prompt with auto", body: autoReq("negative_prompt", "blur"), field: "negative_prompt"},
		{name: "unknown field auto", body: autoReq("colour", "red"), field: "colour"},
		{name: "unknown field manual", body: manualReq("fps", 24), field: "fps"},
		{name: "misspelled field", body: autoReq("duration", 30), field: "duration"},

		// Wrong types.
		{name: "seed a string", body: manualReq("seed", "42"), field: "seed"},
		{name: "seed a fraction", body: `{"mode":"manual","prompt":"x","seed":1.5}`, field: "seed"},
		{name: "cfg_scale a string", body: manualReq("model", "kling-2.1-master", "cfg_scale", "0.5"), field: "cfg_scale"},
		{name: "generate_audio yes", body: manualReq("model", "veo-3", "generate_audio", "yes"), field: "generate_audio"},
		{name: "generate_audio 1", body: manualReq("model", "veo-3", "generate_audio", 1), field: "generate_audio"},
		{name: "camera_fixed a string", body: manualReq("model", "seedance-1.0-pro", "camera_fixed", "true"), field: "camera_fixed"},
		{name: "image_urls a string", body: manualReq("model", "vidu-q1", "image_urls", publicImg), field: "image_urls"},
		{name: "image_urls numbers", body: manualReq("model", "vidu-q1", "image_urls", []int{1, 2}), field: "image_urls"},
		{name: "model a number", body: manualReq("model", 3), field: "model"},
		{name: "name a number", body: autoReq("name", 3), field: "name"},
		{name: "file_asset_ids a string", body: autoReq("file_asset_ids", "as_1"), field: "file_asset_ids"},

		// Auto-only fields' own values.
		{name: "orientation invalid", body: autoReq("orientation", "square"), field: "orientation", allowed: []string{"landscape", "portrait"}},
		{name: "orientation empty", body: autoReq("orientation", ""), field: "orientation"},
		{name: "brand_kit_id without br_", body: autoReq("brand_kit_id", "kit_123"), field: "brand_kit_id"},
		{name: "brand_kit_id of no kit", body: autoReq("brand_kit_id", "br_123"), field: "brand_kit_id"},

		// Model and per-model values.
		{name: "unknown model", body: manualReq("model", "sora-9"), code: "unknown_model", field: "model"},
		{name: "model id with wrong case", body: manualReq("model", "VEO-3"), code: "unknown_model", field: "model"},
		{name: "resolution not offered", body: manualReq("model", vidu.ID, "resolution", "4k"), field: "resolution", allowed: vidu.Resolutions},
		{name: "resolution unknown", body: manualReq("model", kling.ID, "resolution", "480p"), field: "resolution", allowed: kling.Resolutions},
		{name: "duration not offered", body: manualReq("model", kling.ID, "duration_seconds", 7), field: "duration_seconds", allowed: kling.Durations},
		{name: "duration not offered vidu", body: manualReq("model", vidu.ID, "duration_seconds", 10), field: "duration_seconds", allowed: vidu.Durations},
		{name: "duration 0 manual", body: manualReq("model", vidu.ID, "duration_seconds", 0), field: "duration_seconds", allowed: vidu.Durations},
		{name: "duration 5.5 manual", body: `{"mode":"manual","prompt":"x","duration_seconds":5.5}`, field: "duration_seconds"},
		{name: "aspect ratio not offered", body: manualReq("model", veo.ID, "aspect_ratio", "1:1"), field: "aspect_ratio", allowed: veo.AspectRatios},
		{name: "aspect ratio not offered mochi", body: manualReq("model", mochi.ID, "aspect_ratio", "9:16"), field: "aspect_ratio", allowed: mochi.AspectRatios},
		{name: "style not offered", body: manualReq("model", pix.ID, "style", "watercolor"), field: "style", allowed: pix.Styles},
		{name: "cfg_scale on vidu", body: manualReq("model", vidu.ID, "cfg_scale", 0.5), field: "cfg_scale"},
		{name: "movement_amplitude on kling", body: manualReq("model", kling.ID, "movement_amplitude", "small"), field: "movement_amplitude"},
		{name: "generate_audio on kling 2.1", body: manualReq("model", kling.ID, "generate_audio", true), field: "generate_audio"},
		{name: "style on a model without styles", body: manualReq("model", veo.ID, "style", "anime"), field: "style"},
		{name: "movement_amplitude value", body: manualReq("model", vidu.ID, "movement_amplitude", "huge"), field: "movement_amplitude", allowed: models.MovementAmplitudes()},
		{name: "cfg_scale out of range", body: manualReq("model", kling.ID, "cfg_scale", 1.5), field: "cfg_scale"},
		{name: "seed negative", body: manualReq("model", veo.ID, "seed", -1), field: "seed"},

		// Operation inference.
		{name: "only first frame", body: manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", publicImg), field: "last_frame_url"},
		{name: "only last frame", body: manualReq("model", "kling-2.5-turbo-pro", "last_frame_url", publicImg), field: "first_frame_url"},
		{name: "image_url and image_urls", body: manualReq("model", "vidu-q1", "image_url", publicImg, "image_urls", []string{publicImg})},
		{name: "image_url and frames", body: manualReq("model", "vidu-q1", "image_url", publicImg, "first_frame_url", publicImg, "last_frame_url", publicImg)},
		{name: "frames and image_urls", body: manualReq("model", "vidu-q1", "image_urls", []string{publicImg}, "first_frame_url", publicImg, "last_frame_url", publicImg)},
		{name: "empty image_urls", body: manualReq("model", "vidu-q1", "image_urls", []string{}), field: "image_urls"},
		{name: "too many image_urls", body: manualReq("model", "vidu-2.0", "image_urls", []string{publicImg, publicImg, publicImg, publicImg}), field: "image_urls"},
		{name: "image_to_video unsupported", body: manualReq("model", mochi.ID, "image_url", publicImg), field: "image_url"},
		{name: "first_last_frame unsupported", body: manualReq("model", kling.ID, "first_frame_url", publicImg, "last_frame_url", publicImg), field: "first_frame_url"},
		{name: "multiple_images unsupported", body: manualReq("model", veo.ID, "image_urls", []string{publicImg}), field: "image_urls"},
		{name: "text_to_video unsupported", body: manualReq("model", "kling-2.1-pro"), field: "model"},

		// URLs: public https only.
		{name: "http image", body: manualReq("image_url", "http://images.example.com/a.png"), code: "invalid_url", field: "image_url"},
		{name: "ftp image", body: manualReq("image_url", "ftp://images.example.com/a.png"), code: "invalid_url", field: "image_url"},
		{name: "not a url", body: manualReq("image_url", "a.png"), code: "invalid_url", field: "image_url"},
		{name: "private 10.x", body: manualReq("image_url", "https://10.1.2.3/a.png"), code: "invalid_url", field: "image_url"},
		{name: "private 192.168", body: manualReq("image_url", "https://192.168.0.10/a.png"), code: "invalid_url", field: "image_url"},
		{name: "private 172.16", body: manualReq("image_url", "https://172.16.5.4/a.png"), code: "invalid_url", field: "image_url"},
		{name: "loopback", body: manualReq("image_url", "https://127.0.0.1/a.png"), code: "invalid_url", field: "image_url"},
		{name: "loopback with port", body: manualReq("image_url", "https://127.0.0.1:8443/a.png"), code: "invalid_url", field: "image_url"},
		{name: "ipv6 loopback", body: manualReq("image_url", "https://[::1]/a.png"), code: "invalid_url", field: "image_url"},
		{name: "ipv4-mapped loopback", body: manualReq("image_url", "https://[::ffff:127.0.0.1]/a.png"), code: "invalid_url", field: "image_url"},
		{name: "metadata address", body: manualReq("image_url", "https://169.254.169.254/latest/meta-data"), code: "invalid_url", field: "image_url"},
		{name: "unspecified address", body: manualReq("image_url", "https://0.0.0.0/a.png"), code: "invalid_url", field: "image_url"},
		{name: "localhost", body: manualReq("image_url", "https://localhost/a.png"), code: "invalid_url", field: "image_url"},
		{name: "localhost upper case", body: manualReq("image_url", "https://LOCALHOST./a.png"), code: "invalid_url", field: "image_url"},
		{name: "sub.localhost", body: manualReq("image_url", "https://api.localhost/a.png"), code: "invalid_url", field: "image_url"},
		{name: "shared address space metadata", body: manualReq("image_url", "https://100.100.100.200/latest/meta-data"), code: "invalid_url", field: "image_url"},
		{name: "ipv6 unique local", body: manualReq("image_url", "https://[fd00:ec2::254]/latest"), code: "invalid_url", field: "image_url"},
		{name: "ipv6 link local", body: manualReq("image_url", "https://[fe80::1]/a.png"), code: "invalid_url", field: "image_url"},
		{name: "nat64 of a private address", body: manualReq("image_url", "https://[64:ff9b::a00:1]/a.png"), code: "invalid_url", field: "image_url"},
		{name: "octal loopback", body: manualReq("image_url", "https://0177.0.0.1/a.png"), code: "invalid_url", field: "image_url"},
		{name: "short loopback", body: manualReq("image_url", "https://127.1/a.png"), code: "invalid_url", field: "image_url"},
		{name: "hex loopback", body: manualReq("image_url", "https://0x7f.0.0.1/a.png"), code: "invalid_url", field: "image_url"},
		{name: "decimal loopback", body: manualReq("image_url", "https://2130706433/a.png"), code: "invalid_url", field: "image_url"},
		{name: "internal name", body: manualReq("image_url", "https://metadata.google.internal/a.png"), code: "invalid_url", field: "image_url"},
		{name: "single-label name", body: manualReq("image_url", "https://intranet/a.png"), code: "invalid_url", field: "image_url"},
		{name: "empty image_url", body: manualReq("model", "veo-3", "image_url", ""), code: "invalid_url", field: "image_url"},
		{name: "empty last frame", body: manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", publicImg, "last_frame_url", ""), code: "invalid_url", field: "last_frame_url"},
		{name: "empty entry of image_urls", body: manualReq("model", "vidu-q1", "image_urls", []string{""}), code: "invalid_url", field: "image_urls"},
		{name: "credentials in url", body: manualReq("image_url", "https://user:pw@images.example.com/a.png"), code: "invalid_url", field: "image_url"},
		{name: "private first frame", body: manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", "https://10.0.0.1/a.png", "last_frame_url", publicImg), code: "invalid_url", field: "first_frame_url"},
		{name: "private last frame", body: manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", publicImg, "last_frame_url", "http://images.example.com/b.png"), code: "invalid_url", field: "last_frame_url"},
		{name: "private entry of image_urls", body: manualReq("model", "vidu-q1", "image_urls", []string{publicImg, "https://127.0.0.1/b.png"}), code: "invalid_url", field: "image_urls"},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := c.code
			if code == "" {
				code = "invalid_request"
			}
			r := h.do("POST", "/v1/videos", key, c.body)
			e := expectAPIError(t, r, http.StatusBadRequest, code)
			if c.field != "" || c.allowed != nil {
				d := errDetails(t, e)
				if c.field != "" && d["field"] != c.field {
					t.Fatalf("details.field = %v, want %q: %s", d["field"], c.field, r.Body)
				}
				if c.allowed != nil && !jsonEqual(t, d["allowed"], c.allowed) {
					t.Fatalf("details.allowed = %v, want %v", d["allowed"], c.allowed)
				}
			}
		})
	}

	t.Run("unknown model lists every model id", func(t *testing.T) {
		e := expectAPIError(t, h.do("POST", "/v1/videos", key, manualReq("model", "nope")), http.StatusBadRequest, "unknown_model")
		got, _ := errDetails(t, e)["existing_model_ids"].([]any)
		if len(got) != 32 || !jsonEqual(t, got, models.IDs()) {
			t.Fatalf("existing_model_ids = %v, want the 32 ids %v", got, models.IDs())
		}
	})

	if h.total(key) != 0 || h.balance(key) != 100000 {
		t.Fatalf("refused requests created videos or charged credits")
	}

	// The boundaries that are allowed.
	for _, c := range []struct {
		name string
		body any
	}{
		{"prompt 5000 ascii", autoReq("prompt", strings.Repeat("a", 5000))},
		{"prompt 5000 multi-byte", manualReq("prompt", strings.Repeat("日", 5000))},
		{"prompt 5000 emoji", autoReq("prompt", strings.Repeat("🎬", 5000))},
		{"prompt 1 char", autoReq("prompt", "x")},
		{"auto duration 5", autoReq("duration_seconds", 5)},
		{"auto duration 300", autoReq("duration_seconds", 300)},
		{"auto duration 30.0", `{"mode":"auto","prompt":"x","duration_seconds":30.0}`},
		{"orientation portrait", autoReq("orientation", "portrait")},
		{"null means absent", `{"mode":"auto","prompt":"x","avatar_id":null,"model":null}`},
		{"public ip image", manualReq("model", "veo-3", "image_url", "https://8.8.8.8/a.png")},
		{"movement_amplitude on vidu", manualReq("model", vidu.ID, "movement_amplitude", "small", "seed", 7)},
		{"cfg_scale on kling", manualReq("model", kling.ID, "cfg_scale", 0.5, "negative_prompt", "blur")},
		{"style offered", manualReq("model", pix.ID, "style", pix.Styles[0])},
	} {
		t.Run("accepts "+c.name, func(t *testing.T) {
			h.create(key, c.body)
		})
	}
}

// TestAPIOperationInference checks the operation the API infers from the image
// fields, as echoed on the created video.
func TestAPIOperationInference(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 100000)
	for _, c := range []struct {
		name string
		body map[string]any
		op   string
	}{
		{"text by default", manualReq("model", "veo-3"), "text_to_video"},
		{"image_url", manualReq("model", "veo-3", "image_url", publicImg), "image_to_video"},
		{"first and last frame", manualReq("model", "kling-2.5-turbo-pro", "first_frame_url", publicImg, "last_frame_url", publicImg), "first_last_frame"},
		{"image_urls", manualReq("model", "vidu-q1", "image_urls", []string{publicImg, publicImg}), "multiple_images"},
		{"image-only model", manualReq("model", "runway-gen4-turbo", "image_url", publicImg), "image_to_video"},
	} {
		v := h.create(key, c.body)
		if v["operation"] != c.op || v["model"] != c.body["model"] || v["mode"] != "manual" || v["object"] != "video" {
			t.Fatalf("%s: want %s on %v, got %v", c.name, c.op, c.body["model"], v)
		}
	}
}

// TestAPIVideoEchoesItsOptions: the video object says what the render
// uses: an auto video's presenter and voice, a manual video's input image
// and model options, in the create's answer and in a read; options the
// request did not set are absent.
func TestAPIVideoEchoesItsOptions(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 10_000)
	auto := h.create(key, autoReq("duration_seconds", 5, "avatar_id", "av_stock_amara", "voice_id", "en-gb"))
	kling := catalogModel(t, "kling-2.1-master")
	manual := h.create(key, manualReq("model", kling.ID, "image_url", publicImg, "negative_prompt", "blur", "cfg_scale", 0.25))
	for _, c := range []struct {
		v           map[string]any
		want        map[string]any
		wantMissing []string
	}{
		{auto, map[string]any{"avatar_id": "av_stock_amara", "voice_id": "en-gb"}, []string{"image_url", "cfg_scale", "seed"}},
		{manual, map[string]any{"image_url": publicImg, "negative_prompt": "blur", "cfg_scale": 0.25}, []string{"avatar_id", "voice_id", "seed", "auto_fix"}},
	} {
		read := expectAPIStatus(t, h.do("GET", "/v1/videos/"+c.v["id"].(string), key, nil), http.StatusOK)
		for _, v := range []map[string]any{c.v, read} {
			for k, want := range c.want {
				if v[k] != want {
					t.Errorf("%s: %s = %v, want %v", v["id"], k, v[k], want)
				}
			}
			for _, k := range c.wantMissing {
				if _, ok := v[k]; ok {
					t.Errorf("%s: %s = %v, want it absent", v["id"], k, v[k])
				}
			}
		}
	}
}
