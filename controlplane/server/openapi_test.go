package server_test

// The OpenAPI document (controlplane/api/openapi.json, served at GET
// /v1/openapi.json) held to real answers: the document must be valid OpenAPI
// 3.1, name exactly the routes of the router, and every request/response pair
// of a scenario that produces each kind of answer must validate against it
// (status, declared headers, body) with libopenapi-validator in strict mode, so
// a field or header the server sends but the document does not declare fails
// too.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/responses"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/vidfarm/vidfarm/controlplane/api"
)

// reqCheck says what the document must say about the request of an exchange.
type reqCheck int

const (
	reqValid   reqCheck = iota // well-formed (even if refused for its content): the document must accept it
	reqInvalid                 // malformed on purpose: the document must refuse it too
)

// exchange is one request the scenario sends, with what it must answer.
type exchange struct {
	name     string
	method   string
	path     string
	key      string // API key sent as Bearer; empty: none
	apiKeyH  string // API key sent as X-API-Key instead
	body     []byte // nil: no body
	chunked  bool   // send the body without a Content-Length
	headers  []string
	req      reqCheck
	status   int
	code     string // error.code expected; empty for a success
	template string // documented path the request goes to; empty: not in the document (405, unknown path)
	stream   bool   // a 2xx answer is not JSON (an event stream); its body is left in oas.body
	// knownIssue names a reported disagreement of the server with the document:
	// the answer is expected not to match, and the test fails once it does.
	knownIssue string
}

// oas holds the document and the validators built from it.
type oas struct {
	t       *testing.T
	model   *v3.Document
	strict  validator.Validator // every exchange but the document itself
	lenient validator.Validator // GET /v1/openapi.json, whose body is a free-form OpenAPI document

	header   http.Header                // headers of the last answer
	body     []byte                     // body of the last answer
	statuses map[int]bool               // statuses seen
	codes    map[string]bool            // error codes seen
	okOps    map[string]map[string]bool // template -> method -> a 2xx was validated
}

func loadOAS(t *testing.T, raw []byte) *oas {
	t.Helper()
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("OpenAPI document does not parse: %v", err)
	}
	if v := doc.GetSpecInfo().Version; !strings.HasPrefix(v, "3.1") {
		t.Fatalf("OpenAPI document is version %q, want 3.1.x", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("OpenAPI document does not build: %v", err)
	}
	strict, errs := validator.NewValidator(doc, config.WithStrictMode())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := strict.ValidateDocument(); !ok {
		t.Fatalf("OpenAPI document is not valid OpenAPI 3.1:\n%s", describe(verrs))
	}
	lenient, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return &oas{t: t, model: &m.Model, strict: strict, lenient: lenient,
		statuses: map[int]bool{}, codes: map[string]bool{}, okOps: map[string]map[string]bool{}}
}

func describe(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s (at %s, schema %s)", f.Reason, f.FieldPath, f.KeywordLocation)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// newRequest builds the request of x against base; called once to send and once
// per validation, since validating reads the body.
func (x exchange) newRequest(t *testing.T, base string) *http.Request {
	t.Helper()
	var rd io.Reader
	if x.body != nil {
		rd = bytes.NewReader(x.body)
		if x.chunked {
			rd = io.MultiReader(rd) // hides the length: sent chunked
		}
	}
	req, err := http.NewRequest(x.method, base+x.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if x.key != "" {
		req.Header.Set("Authorization", "Bearer "+x.key)
	}
	if x.apiKeyH != "" {
		req.Header.Set("X-API-Key", x.apiKeyH)
	}
	if x.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(x.headers); i += 2 {
		req.Header.Set(x.headers[i], x.headers[i+1])
	}
	return req
}

// run sends x to h, checks its status and code, validates the pair against the
// document and returns the decoded body.
func (o *oas) run(h *harness, x exchange) map[string]any {
	t := o.t
	t.Helper()
	resp, err := http.DefaultClient.Do(x.newRequest(t, h.base))
	if err != nil {
		t.Fatalf("%s: %v", x.name, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s: read body: %v", x.name, err)
	}
	if resp.StatusCode != x.status {
		t.Fatalf("%s: %s %s answered %d, want %d: %s", x.name, x.method, x.path, resp.StatusCode, x.status, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil && !(x.stream && resp.StatusCode < 300) {
		t.Fatalf("%s: body is not a JSON object (%v): %s", x.name, err, body)
	}
	o.body = body
	if x.code != "" {
		if got := errorCodeOf(out); got != x.code {
			t.Fatalf("%s: error.code %q, want %q: %s", x.name, got, x.code, body)
		}
		o.codes[x.code] = true
	}
	o.statuses[resp.StatusCode] = true
	o.header = resp.Header
	fresh := func() *http.Response {
		r := *resp
		r.Body = io.NopCloser(bytes.NewReader(body))
		return &r
	}

	if x.template == "" {
		o.checkUndocumented(h, x, fresh(), body)
		return out
	}
	v := o.strict
	if x.template == "/v1/openapi.json" {
		v = o.lenient
	}
	switch ok, errs := v.ValidateHttpResponse(x.newRequest(t, h.base), fresh()); {
	case !ok && x.knownIssue != "":
		t.Logf("%s: known issue (%s):\n%s", x.name, x.knownIssue, describe(errs))
	case !ok:
		t.Errorf("%s: %s %s -> %d does not match the OpenAPI document:\n%s\nbody: %s",
			x.name, x.method, x.path, resp.StatusCode, describe(errs), body)
	case x.knownIssue != "":
		t.Errorf("%s: matches the document now; remove knownIssue %q", x.name, x.knownIssue)
	}
	switch ok, errs := v.ValidateHttpRequestSync(x.newRequest(t, h.base)); {
	case x.req == reqValid && !ok:
		t.Errorf("%s: the document refuses a request the server accepts as well-formed:\n%s", x.name, describe(errs))
	case x.req == reqInvalid && ok:
		t.Errorf("%s: the document accepts a request the server refuses as malformed (%d %s)", x.name, x.status, x.code)
	}
	if resp.StatusCode < 300 {
		if o.okOps[x.template] == nil {
			o.okOps[x.template] = map[string]bool{}
		}
		o.okOps[x.template][x.method] = true
	}
	return out
}

// checkUndocumented validates an answer to a path or method outside the
// document (404 for an unknown path, 405 for a method a path lacks) against the
// component response the document describes it with.
func (o *oas) checkUndocumented(h *harness, x exchange, resp *http.Response, body []byte) {
	t := o.t
	t.Helper()
	name := map[int]string{http.StatusNotFound: "NotFound", http.StatusMethodNotAllowed: "MethodNotAllowed"}[x.status]
	comp := o.model.Components.Responses.GetOrZero(name)
	if comp == nil {
		t.Fatalf("%s: the document has no components.responses.%s for the %d answer", x.name, name, x.status)
	}
	// The validator must not know the route: otherwise it belongs in paths.
	if ok, _ := o.strict.ValidateHttpResponse(x.newRequest(t, h.base), resp); ok {
		t.Errorf("%s: %s %s is documented; give the exchange its template", x.name, x.method, x.path)
	}
	media := comp.Content.GetOrZero("application/json")
	if media == nil || media.Schema == nil {
		t.Fatalf("components.responses.%s has no application/json schema", name)
	}
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(media.Schema.Schema(), body); !ok {
		t.Errorf("%s: %d body does not match components.responses.%s:\n%s\nbody: %s", x.name, x.status, name, describe(errs), body)
	}
	if ok, errs := responses.ValidateResponseHeaders(x.newRequest(t, h.base), resp, comp.Headers, x.path, strconv.Itoa(x.status)); !ok {
		t.Errorf("%s: %d headers do not match components.responses.%s:\n%s", x.name, x.status, name, describe(errs))
	}
}

func errorCodeOf(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// documentedOps lists "METHOD path" for every operation of the document.
func (o *oas) documentedOps() []string {
	var out []string
	for path, item := range o.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().KeysFromOldest() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// routerOps lists the public router's JSON API routes (those under /v1; /files/
// serves signed file URLs and / is an alias of /v1, outside the document).
func routerOps(h *harness) []string {
	var out []string
	for _, r := range h.srv.API.Routes() {
		if _, path, _ := strings.Cut(r, " "); path == "/v1" || strings.HasPrefix(path, "/v1/") {
			out = append(out, r)
		}
	}
	return out
}

func TestOpenAPIDocumentMatchesServer(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	ctx := context.Background()
	_, key := h.account("pro", 1000)

	// The document, from the served endpoint.
	docResp := h.do("GET", "/v1/openapi.json", key, nil)
	if docResp.Status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", docResp.Status, docResp.Body)
	}
	o := loadOAS(t, docResp.Body)

	// Paths: the document's operations are exactly the router's.
	if doc, router := o.documentedOps(), routerOps(h); !slices.Equal(doc, router) {
		t.Errorf("the document's operations differ from the router's\ndocument: %q\nrouter:   %q", doc, router)
	}
	// The running router agrees: a method no path offers answers 405 whose Allow
	// lists exactly the documented methods of the path, and HEAD with GET.
	for path, item := range o.model.Paths.PathItems.FromOldest() {
		var want []string
		for m := range item.GetOperations().KeysFromOldest() {
			want = append(want, strings.ToUpper(m))
		}
		if slices.Contains(want, "GET") {
			want = append(want, "HEAD") // served on every GET route, not documented apart
		}
		concrete := strings.ReplaceAll(path, "{id}", probeID(path))
		o.run(h, exchange{name: "PATCH " + path, method: "PATCH", path: concrete, key: key,
			status: http.StatusMethodNotAllowed, code: "invalid_request"})
		got := strings.Split(o.header.Get("Allow"), ", ")
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("PATCH %s: Allow %q, the document has %q", path, got, want)
		}
	}

	// Meta and account.
	o.run(h, exchange{name: "root", method: "GET", path: "/v1", status: 200, template: "/v1"})
	o.run(h, exchange{name: "document", method: "GET", path: "/v1/openapi.json", key: key, status: 200, template: "/v1/openapi.json"})
	o.run(h, exchange{name: "document, X-API-Key", method: "GET", path: "/v1/openapi.json", apiKeyH: key, status: 200, template: "/v1/openapi.json"})
	o.run(h, exchange{name: "me", method: "GET", path: "/v1/me", key: key, status: 200, template: "/v1/me"})
	models := o.run(h, exchange{name: "models", method: "GET", path: "/v1/models", key: key, status: 200, template: "/v1/models"})
	if n := len(models["data"].([]any)); n != 32 {
		t.Errorf("GET /v1/models: %d models, the contract says 32", n)
	}

	// Voices: none until a node with espeak-ng registers.
	noVoices := o.run(h, exchange{name: "voices, none yet", method: "GET", path: "/v1/voices", key: key, status: 200, template: "/v1/voices"})
	if noVoices["total"] != float64(0) {
		t.Errorf("voices before any node registered: %v", noVoices)
	}

	// Folders.
	fld := o.run(h, exchange{name: "create folder", method: "POST", path: "/v1/folders", key: key,
		body: []byte(`{"name":"Launch"}`), status: 201, template: "/v1/folders"})
	folderID := fld["id"].(string)
	o.run(h, exchange{name: "list folders", method: "GET", path: "/v1/folders", key: key, status: 200, template: "/v1/folders"})
	o.run(h, exchange{name: "folder without name", method: "POST", path: "/v1/folders", key: key,
		body: []byte(`{"title":"x"}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/folders"})

	// Uploads, assets and brand kits.
	assetID, kitID := o.mediaScenario(h, key)

	// Videos of a premium account.
	autoBody := []byte(`{"mode":"auto","prompt":"a lantern festival","duration_seconds":11,"name":"Lanterns",` +
		`"folder_id":"` + folderID + `","orientation":"portrait","voice_id":"v1","brand_kit_id":"` + kitID + `","file_asset_ids":["` + assetID + `"]}`)
	auto := o.run(h, exchange{name: "auto video", method: "POST", path: "/v1/videos", key: key, body: autoBody,
		headers: []string{"Idempotency-Key", "order-1"}, status: 201, template: "/v1/videos"})
	autoID := auto["id"].(string)
	if auto["status"] != "queued" {
		t.Errorf("auto video on a premium account: status %v, want queued", auto["status"])
	}
	replay := o.run(h, exchange{name: "idempotent replay", method: "POST", path: "/v1/videos", key: key, body: autoBody,
		headers: []string{"Idempotency-Key", "order-1"}, status: 201, template: "/v1/videos"})
	if replay["id"] != autoID || o.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: id %v (want %s), Idempotent-Replayed %q", replay["id"], autoID, o.header.Get("Idempotent-Replayed"))
	}
	o.run(h, exchange{name: "same key, other body", method: "POST", path: "/v1/videos", key: key,
		body:    []byte(`{"mode":"auto","prompt":"something else"}`),
		headers: []string{"Idempotency-Key", "order-1"}, status: 409, code: "duplicate_request", template: "/v1/videos"})

	manual := o.run(h, exchange{name: "manual video", method: "POST", path: "/v1/videos", key: key,
		body: []byte(`{"mode":"manual","prompt":"a fox at dawn","model":"kling-2.5-turbo-pro","resolution":"720p",` +
			`"duration_seconds":5,"aspect_ratio":"9:16","negative_prompt":"blur","cfg_scale":0.5,` +
			`"first_frame_url":"https://img.example.com/a.png","last_frame_url":"https://img.example.com/b.png"}`),
		status: 201, template: "/v1/videos"})
	if manual["operation"] != "first_last_frame" {
		t.Errorf("manual video with both frames: operation %v", manual["operation"])
	}
	o.run(h, exchange{name: "manual video, defaults", method: "POST", path: "/v1/videos", key: key,
		body: []byte(`{"mode":"manual","prompt":"rain on a window"}`), status: 201, template: "/v1/videos"})
	o.run(h, exchange{name: "get video", method: "GET", path: "/v1/videos/" + manual["id"].(string), key: key, status: 200, template: "/v1/videos/{id}"})
	o.run(h, exchange{name: "list videos", method: "GET", path: "/v1/videos", key: key, status: 200, template: "/v1/videos"})
	page := o.run(h, exchange{name: "list videos, page", method: "GET", path: "/v1/videos?limit=1&status=queued", key: key, status: 200, template: "/v1/videos"})
	if page["has_more"] != true {
		t.Errorf("first page of one of several queued videos: has_more %v", page["has_more"])
	}
	o.run(h, exchange{name: "list videos, next page", method: "GET", key: key, status: 200, template: "/v1/videos",
		path: "/v1/videos?limit=1&starting_after=" + page["data"].([]any)[0].(map[string]any)["id"].(string)})
	o.run(h, exchange{name: "list videos, folder", method: "GET", path: "/v1/videos?folder_id=" + folderID, key: key, status: 200, template: "/v1/videos"})

	// Voices, once a node registered its espeak-ng's: "v1" above was accepted
	// with no catalogue, and is refused now.
	h.registerVoiceNode("tts-1", testVoices...)
	voices := o.run(h, exchange{name: "voices", method: "GET", path: "/v1/voices", key: key, status: 200, template: "/v1/voices"})
	if voices["total"] != float64(len(testVoices)) {
		t.Errorf("voices after a node registered %d: %v", len(testVoices), voices)
	}
	o.run(h, exchange{name: "voices, filtered", method: "GET", path: "/v1/voices?language=EN&gender=female&search=america&limit=1&starting_after=en-gb", key: key,
		status: 200, template: "/v1/voices"})
	for q, req := range map[string]reqCheck{"limit=0": reqInvalid, "limit=501": reqInvalid, "gender=other": reqInvalid,
		"language=": reqInvalid, "language=en%20us": reqInvalid, "colour=red": reqInvalid} {
		o.run(h, exchange{name: "voices?" + q, method: "GET", path: "/v1/voices?" + q, key: key, req: req,
			status: 400, code: "invalid_request", template: "/v1/voices"})
	}
	o.run(h, exchange{name: "auto video, catalogued voice", method: "POST", path: "/v1/videos", key: key,
		body: []byte(`{"mode":"auto","prompt":"a kite","voice_id":"en-us+f3"}`), status: 201, template: "/v1/videos"})
	mediaScenario(t, o)

	// What a queued video uses is kept.
	o.run(h, exchange{name: "delete a kit in use", method: "DELETE", path: "/v1/brand-kits/" + kitID, key: key, status: 400, code: "invalid_request", template: "/v1/brand-kits/{id}"})
	o.run(h, exchange{name: "delete an asset in use", method: "DELETE", path: "/v1/assets/" + assetID, key: key, status: 400, code: "invalid_request", template: "/v1/assets/{id}"})
	o.run(h, exchange{name: "delete an asset in use, by query", method: "DELETE", path: "/v1/assets?asset_id=" + assetID, key: key, status: 400, code: "invalid_request", template: "/v1/assets"})
	o.run(h, exchange{name: "delete an asset in use, by body", method: "DELETE", path: "/v1/assets", key: key, body: []byte(`{"asset_id":"` + assetID + `"}`), status: 400, code: "invalid_request", template: "/v1/assets"})
	o.run(h, exchange{name: "delete assets, none named", method: "DELETE", path: "/v1/assets", key: key, status: 400, code: "invalid_request", template: "/v1/assets"})
	o.run(h, exchange{name: "delete a missing asset, by query", method: "DELETE", path: "/v1/assets?asset_id=as_missing", key: key, status: 404, code: "not_found", template: "/v1/assets"})

	// A failed video.
	if _, err := h.admin.FailVideo(ctx, autoID, "GPU node lost"); err != nil {
		t.Fatalf("fail video: %v", err)
	}
	o.run(h, exchange{name: "delete a kit", method: "DELETE", path: "/v1/brand-kits/" + kitID, key: key, status: 200, template: "/v1/brand-kits/{id}"})
	o.run(h, exchange{name: "delete an asset", method: "DELETE", path: "/v1/assets/" + assetID, key: key, status: 200, template: "/v1/assets/{id}"})
	pending := o.run(h, exchange{name: "an asset to delete by name", method: "POST", path: "/v1/assets", key: key,
		body: []byte(`{"filename":"x.png","content_type":"image/png","size_bytes":10}`), status: 201, template: "/v1/assets"})
	o.run(h, exchange{name: "delete an asset by query", method: "DELETE", path: "/v1/assets?asset_id=" + pending["id"].(string), key: key, status: 200, template: "/v1/assets"})
	failed := o.run(h, exchange{name: "failed video", method: "GET", path: "/v1/videos/" + autoID, key: key, status: 200, template: "/v1/videos/{id}"})
	if failed["status"] != "failed" {
		t.Errorf("failed video: status %v", failed["status"])
	}

	// A free account: preview, then render after the upgrade.
	freeID, freeKey := h.account("free", 0)
	o.run(h, exchange{name: "me, free", method: "GET", path: "/v1/me", key: freeKey, status: 200, template: "/v1/me"})
	prev := o.run(h, exchange{name: "preview video", method: "POST", path: "/v1/videos", key: freeKey,
		body: []byte(`{"mode":"auto","prompt":"a paper boat"}`), status: 201, template: "/v1/videos"})
	prevID := prev["id"].(string)
	if prev["status"] != "preview" {
		t.Errorf("free account's first video: status %v, want preview", prev["status"])
	}
	o.run(h, exchange{name: "get preview", method: "GET", path: "/v1/videos/" + prevID, key: freeKey, status: 200, template: "/v1/videos/{id}"})
	o.run(h, exchange{name: "second free project", method: "POST", path: "/v1/videos", key: freeKey,
		body: []byte(`{"mode":"auto","prompt":"another boat"}`), status: 403, code: "free_limit_reached", template: "/v1/videos"})
	o.run(h, exchange{name: "render before upgrade", method: "POST", path: "/v1/videos/" + prevID + "/render", key: freeKey,
		status: 403, code: "upgrade_required", template: "/v1/videos/{id}/render"})
	if _, err := h.admin.SetPlan(ctx, freeID, "pro"); err != nil {
		t.Fatalf("set plan: %v", err)
	}
	rendered := o.run(h, exchange{name: "render after upgrade", method: "POST", path: "/v1/videos/" + prevID + "/render", key: freeKey,
		status: 200, template: "/v1/videos/{id}/render"})
	if rendered["status"] != "queued" || rendered["credits_charged"] != float64(0) {
		t.Errorf("rendered preview: status %v, credits_charged %v; want queued, 0", rendered["status"], rendered["credits_charged"])
	}
	o.run(h, exchange{name: "render again, {}", method: "POST", path: "/v1/videos/" + prevID + "/render", key: freeKey,
		body: []byte(`{}`), status: 200, template: "/v1/videos/{id}/render"})
	toCancel := "/v1/videos/" + h.create(key, autoReq("duration_seconds", 30))["id"].(string) + "/cancel"
	o.run(h, exchange{name: "cancel a queued video", method: "POST", path: toCancel, key: key, status: 200, template: "/v1/videos/{id}/cancel"})
	o.run(h, exchange{name: "cancel again, {}", method: "POST", path: toCancel, key: key, body: []byte(`{}`), status: 200, template: "/v1/videos/{id}/cancel"})
	o.run(h, exchange{name: "cancel with a field", method: "POST", path: toCancel, key: key, body: []byte(`{"force":true}`), req: reqInvalid,
		status: 400, code: "invalid_request", template: "/v1/videos/{id}/cancel"})
	// The events of the canceled video: its final state, then the end; with
	// that event's id, nothing more (204).
	events := strings.TrimSuffix(toCancel, "/cancel") + "/events"
	o.run(h, exchange{name: "events of a canceled video", method: "GET", path: events, key: key, status: 200, stream: true, template: "/v1/videos/{id}/events"})
	_, rest, _ := strings.Cut(string(o.body), "id: ")
	lastID, _, _ := strings.Cut(rest, "\n")
	if !strings.Contains(string(o.body), `"status":"canceled"`) || lastID == "" {
		t.Fatalf("the events of a canceled video: %s", o.body)
	}
	o.run(h, exchange{name: "events after the final one", method: "GET", path: events, key: key, headers: []string{"Last-Event-ID", lastID},
		status: 204, stream: true, template: "/v1/videos/{id}/events"})
	o.run(h, exchange{name: "events, a bad Last-Event-ID", method: "GET", path: events, key: key, headers: []string{"Last-Event-ID", "x"},
		req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/videos/{id}/events"})
	o.run(h, exchange{name: "events of an unknown video", method: "GET", path: "/v1/videos/vid_nope/events", key: key, status: 404, code: "not_found", template: "/v1/videos/{id}/events"})

	// 400.
	for _, x := range []exchange{
		{name: "field of the other mode", body: []byte(`{"mode":"auto","prompt":"x","model":"kling-2.1-pro"}`), req: reqInvalid, code: "invalid_request"},
		{name: "unknown field", body: []byte(`{"mode":"manual","prompt":"x","colour":"red"}`), req: reqInvalid, code: "invalid_request"},
		{name: "no prompt", body: []byte(`{"mode":"auto"}`), req: reqInvalid, code: "invalid_request"},
		{name: "prompt too long", body: []byte(`{"mode":"auto","prompt":"` + strings.Repeat("a", 5001) + `"}`), req: reqInvalid, code: "invalid_request"},
		{name: "auto too short", body: []byte(`{"mode":"auto","prompt":"x","duration_seconds":4}`), req: reqInvalid, code: "invalid_request"},
		{name: "wrong type", body: []byte(`{"mode":"auto","prompt":"x","duration_seconds":"10"}`), req: reqInvalid, code: "invalid_request"},
		{name: "not JSON", body: []byte(`{"mode":`), req: reqInvalid, code: "invalid_request"},
		{name: "two operations", body: []byte(`{"mode":"manual","prompt":"x","image_url":"https://a.example.com/1.png","image_urls":["https://a.example.com/2.png"]}`), req: reqInvalid, code: "invalid_request"},
		{name: "resolution the model lacks", body: []byte(`{"mode":"manual","prompt":"x","model":"kling-2.1-pro","resolution":"4k","image_url":"https://a.example.com/1.png"}`), code: "invalid_request"},
		{name: "unknown model", body: []byte(`{"mode":"manual","prompt":"x","model":"no-such-model"}`), code: "unknown_model"},
		{name: "private image address", body: []byte(`{"mode":"manual","prompt":"x","model":"kling-2.5-turbo-pro","image_url":"https://127.0.0.1/a.png"}`), code: "invalid_url"},
		{name: "plain http image", body: []byte(`{"mode":"manual","prompt":"x","image_url":"http://a.example.com/a.png"}`), req: reqInvalid, code: "invalid_url"},
		{name: "non-ASCII idempotency key", body: []byte(`{"mode":"auto","prompt":"x"}`), headers: []string{"Idempotency-Key", "clé"}, req: reqInvalid, code: "invalid_request"},
		{name: "voice not in the catalogue", body: []byte(`{"mode":"auto","prompt":"x","voice_id":"en-uss"}`), code: "invalid_request"},
	} {
		x.method, x.path, x.key, x.status, x.template = "POST", "/v1/videos", key, 400, "/v1/videos"
		o.run(h, x)
	}
	for q, req := range map[string]reqCheck{"limit=0": reqInvalid, "limit=101": reqInvalid, "status=done": reqInvalid,
		"colour=red": reqInvalid, "folder_id=fld_nope": reqValid} {
		o.run(h, exchange{name: "list videos?" + q, method: "GET", path: "/v1/videos?" + q, key: key, req: req,
			status: 400, code: "invalid_request", template: "/v1/videos"})
	}
	o.run(h, exchange{name: "render a video that is no preview", method: "POST", path: "/v1/videos/" + manual["id"].(string) + "/render", key: key,
		status: 400, code: "invalid_request", template: "/v1/videos/{id}/render"})
	o.run(h, exchange{name: "render with a field", method: "POST", path: "/v1/videos/" + prevID + "/render", key: freeKey,
		body: []byte(`{"force":true}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/videos/{id}/render"})

	// 401.
	keyInfo, err := h.admin.CreateKey(ctx, freeID)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	if _, err := h.admin.RevokeKey(ctx, keyInfo.KeyID); err != nil {
		t.Fatalf("revoke key: %v", err)
	}
	o.run(h, exchange{name: "no key", method: "GET", path: "/v1/me", req: reqInvalid, status: 401, code: "missing_api_key", template: "/v1/me"})
	o.run(h, exchange{name: "no key, create", method: "POST", path: "/v1/videos", body: []byte(`{"mode":"auto","prompt":"x"}`), req: reqInvalid, status: 401, code: "missing_api_key", template: "/v1/videos"})
	o.run(h, exchange{name: "unknown key", method: "GET", path: "/v1/models", key: "vf_live_nope", status: 401, code: "invalid_api_key", template: "/v1/models"})
	o.run(h, exchange{name: "revoked key", method: "GET", path: "/v1/videos", apiKeyH: keyInfo.APIKey, status: 401, code: "api_key_revoked", template: "/v1/videos"})

	// 402.
	_, poorKey := h.account("pro", 2)
	o.run(h, exchange{name: "too few credits", method: "POST", path: "/v1/videos", key: poorKey,
		body: []byte(`{"mode":"auto","prompt":"x","duration_seconds":60}`), status: 402, code: "insufficient_credits", template: "/v1/videos"})

	// 404.
	o.run(h, exchange{name: "unknown video", method: "GET", path: "/v1/videos/vid_nope", key: key, status: 404, code: "not_found", template: "/v1/videos/{id}"})
	o.run(h, exchange{name: "another account's video", method: "GET", path: "/v1/videos/" + prevID, key: key, status: 404, code: "not_found", template: "/v1/videos/{id}"})
	o.run(h, exchange{name: "render unknown video", method: "POST", path: "/v1/videos/vid_nope/render", key: key, status: 404, code: "not_found", template: "/v1/videos/{id}/render"})
	o.run(h, exchange{name: "unknown path", method: "GET", path: "/v1/no-such-resource", key: key, status: 404, code: "not_found"})

	// 405.
	o.run(h, exchange{name: "DELETE /v1/videos", method: "DELETE", path: "/v1/videos", key: key, status: 405, code: "invalid_request"})
	o.run(h, exchange{name: "POST /v1/me", method: "POST", path: "/v1/me", key: key, body: []byte(`{}`), status: 405, code: "invalid_request"})

	// 413, with and without a declared length.
	big := []byte(`{"mode":"auto","prompt":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}`)
	o.run(h, exchange{name: "body too large", method: "POST", path: "/v1/videos", key: key, body: big, req: reqInvalid, status: 413, code: "payload_too_large", template: "/v1/videos"})
	o.run(h, exchange{name: "chunked body too large", method: "POST", path: "/v1/videos", key: key, body: big, chunked: true, req: reqInvalid, status: 413, code: "payload_too_large", template: "/v1/videos"})
	o.run(h, exchange{name: "folder body too large", method: "POST", path: "/v1/folders", key: key, body: big, req: reqInvalid, status: 413, code: "payload_too_large", template: "/v1/folders"})

	// 429, on a node with the contract's limits: a free account may create 2 videos a minute.
	lim := start(t, withLimits(api.ContractLimits()))
	_, limKey := lim.account("free", 0)
	create := exchange{method: "POST", path: "/v1/videos", key: limKey, body: []byte(`{"mode":"auto","prompt":"x"}`), template: "/v1/videos"}
	for i, want := range []struct {
		status int
		code   string
	}{{201, ""}, {403, "free_limit_reached"}, {429, "rate_limited"}} {
		x := create
		x.name, x.status, x.code = fmt.Sprintf("free create #%d", i+1), want.status, want.code
		o.run(lim, x)
	}

	webhookExchanges(o, h)
	eventExchanges(o, h)

	// Coverage: every kind of answer and every operation's success were validated.
	for _, s := range []int{200, 201, 400, 401, 402, 403, 404, 405, 409, 413, 429} {
		if !o.statuses[s] {
			t.Errorf("no %d answer was validated", s)
		}
	}
	for _, c := range []string{"invalid_request", "unknown_model", "invalid_url", "missing_api_key", "invalid_api_key",
		"api_key_revoked", "insufficient_credits", "upgrade_required", "free_limit_reached", "not_found",
		"duplicate_request", "payload_too_large", "rate_limited", "webhook_limit_reached"} {
		if !o.codes[c] {
			t.Errorf("no %s error was validated", c)
		}
	}
	for _, op := range o.documentedOps() {
		method, path, _ := strings.Cut(op, " ")
		if !o.okOps[path][method] {
			t.Errorf("no successful answer of %s was validated", op)
		}
	}
}
