package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/avatarart"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func promptAvatarReq(kv ...any) map[string]any {
	b := map[string]any{"kind": "prompt", "prompt": "a cheerful woman in a red jacket", "name": "Rosa"}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func photoAvatarReq(kv ...any) map[string]any {
	b := map[string]any{"kind": "photo", "file_url": "https://images.example.com/me.jpg", "consent": true}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func TestAvatarCreateValidation(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 0)
	without := func(b map[string]any, k string) map[string]any { delete(b, k); return b }
	for name, tc := range map[string]struct {
		body        any
		code, field string
	}{
		"empty body":          {"", "invalid_request", ""},
		"no kind":             {map[string]any{"prompt": "x"}, "invalid_request", "kind"},
		"bad kind":            {promptAvatarReq("kind", "sketch"), "invalid_request", "kind"},
		"kind not a string":   {promptAvatarReq("kind", 3), "invalid_request", "kind"},
		"no prompt":           {without(promptAvatarReq(), "prompt"), "invalid_request", "prompt"},
		"blank prompt":        {promptAvatarReq("prompt", "   "), "invalid_request", "prompt"},
		"long prompt":         {promptAvatarReq("prompt", strings.Repeat("a", 1001)), "invalid_request", "prompt"},
		"prompt and file_url": {promptAvatarReq("file_url", "https://images.example.com/me.jpg"), "invalid_request", "file_url"},
		"long name":           {promptAvatarReq("name", strings.Repeat("n", 101)), "invalid_request", "name"},
		"bad gender":          {promptAvatarReq("gender", "robot"), "invalid_request", "gender"},
		"unknown field":       {promptAvatarReq("style", "anime"), "invalid_request", "style"},
		"photo no consent":    {without(photoAvatarReq(), "consent"), "invalid_request", "consent"},
		"photo consent false": {photoAvatarReq("consent", false), "invalid_request", "consent"},
		"consent not boolean": {photoAvatarReq("consent", "yes"), "invalid_request", "consent"},
		"photo no file_url":   {without(photoAvatarReq(), "file_url"), "invalid_request", "file_url"},
		"photo and prompt":    {photoAvatarReq("prompt", "me"), "invalid_request", "prompt"},
		"photo over http":     {photoAvatarReq("file_url", "http://images.example.com/me.jpg"), "invalid_url", "file_url"},
		"photo on loopback":   {photoAvatarReq("file_url", "https://127.0.0.1/me.jpg"), "invalid_url", "file_url"},
		"photo metadata":      {photoAvatarReq("file_url", "https://169.254.169.254/latest"), "invalid_url", "file_url"},
		"photo private name":  {photoAvatarReq("file_url", "https://db.internal/me.jpg"), "invalid_url", "file_url"},
	} {
		t.Run(name, func(t *testing.T) {
			e := expectAPIError(t, h.do("POST", "/v1/avatars", key, tc.body), http.StatusBadRequest, tc.code)
			if tc.field != "" {
				if d := errDetails(t, e); d["field"] != tc.field {
					t.Fatalf("details.field %v, want %s: %v", d["field"], tc.field, e)
				}
			}
		})
	}
	if r := h.do("GET", "/v1/avatars?view=characters", key, nil).json(t); r["total"] != float64(6) {
		t.Fatalf("refused creates left avatars behind: %v", r)
	}
}

func TestAvatarListFilters(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 0)
	_, otherKey := h.account("pro", 0)
	created := h.do("POST", "/v1/avatars", key, promptAvatarReq("gender", "female"))
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	av := created.json(t)
	id := av["id"].(string)
	if !strings.HasPrefix(id, "av_") || av["status"] != "pending" || av["owned"] != true || av["kind"] != "prompt" ||
		created.Header.Get("Location") != "/v1/avatars/"+id {
		t.Fatalf("created avatar %v (Location %q)", av, created.Header.Get("Location"))
	}
	h.do("POST", "/v1/avatars", key, promptAvatarReq("prompt", "a robot presenter", "name", ""))

	for _, tc := range []struct {
		query string
		total int
		first string
	}{
		{"", 8, ""}, // characters by default: own (newest first), then stock
		{"?view=characters&limit=1", 8, ""},
		{"?view=catalogue", 6, "av_stock_amara"},
		{"?gender=male", 3, "av_stock_ben"},
		{"?gender=female", 4, id},
		{"?search=ROSA", 1, id},
		{"?search=robot", 1, ""},
		{"?view=catalogue&search=rosa", 0, ""},
		{"?view=catalogue&gender=female&search=far", 1, "av_stock_farah"},
	} {
		r := h.do("GET", "/v1/avatars"+tc.query, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.query, r.Status, r.Body)
		}
		var list struct {
			Data    []map[string]any `json:"data"`
			Count   int              `json:"count"`
			Total   int              `json:"total"`
			HasMore bool             `json:"has_more"`
		}
		_ = json.Unmarshal(r.Body, &list)
		if list.Total != tc.total || list.Count != len(list.Data) || list.HasMore != (list.Count < list.Total) {
			t.Errorf("%s: count %d total %d has_more %v, want total %d", tc.query, list.Count, list.Total, list.HasMore, tc.total)
		}
		if tc.first != "" && (len(list.Data) == 0 || list.Data[0]["id"] != tc.first) {
			t.Errorf("%s: first %v, want %s", tc.query, list.Data, tc.first)
		}
	}
	if r := h.do("GET", "/v1/avatars?limit=3", key, nil).json(t); r["data"].([]any)[0].(map[string]any)["name"] != "a robot presenter" {
		t.Errorf("a prompt avatar without a name is named after its prompt, newest first: %v", r["data"])
	}
	for q, field := range map[string]string{"view=all": "view", "gender=x": "gender", "limit=0": "limit", "limit=101": "limit",
		"limit=abc": "limit", "sort=name": "sort", "search=" + strings.Repeat("s", 101): "search", "view=catalogue&view=characters": "view"} {
		e := expectAPIError(t, h.do("GET", "/v1/avatars?"+q, key, nil), http.StatusBadRequest, "invalid_request")
		if errDetails(t, e)["field"] != field {
			t.Errorf("?%s: %v, want details.field %s", q, e, field)
		}
	}
	// Another account sees only the stock presenters, and not this avatar.
	if r := h.do("GET", "/v1/avatars", otherKey, nil).json(t); r["total"] != float64(6) {
		t.Errorf("another account's list: %v", r)
	}
	expectAPIError(t, h.do("GET", "/v1/avatars/"+id, otherKey, nil), http.StatusNotFound, "not_found")
	expectAPIError(t, h.do("GET", "/v1/avatars/av_nobody", key, nil), http.StatusNotFound, "not_found")
	if s := h.do("GET", "/v1/avatars/av_stock_ben", otherKey, nil).json(t); s["status"] != "ready" || s["kind"] != "stock" || s["gender"] != "male" {
		t.Errorf("stock avatar: %v", s)
	}
}

// TestStockAvatarPictures: every stock presenter in the catalogue has an
// image_url, and it serves the picture agents composite, with no key; the
// signature binds the URL to its avatar.
func TestStockAvatarPictures(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 0)
	list := h.do("GET", "/v1/avatars?view=catalogue", key, nil).json(t)
	data, _ := list["data"].([]any)
	if len(data) != len(models.StockAvatars()) {
		t.Fatalf("catalogue: %v", list)
	}
	urls := map[string]string{}
	for _, item := range data {
		av := item.(map[string]any)
		id, _ := av["id"].(string)
		u, _ := av["image_url"].(string)
		if u == "" {
			t.Fatalf("stock avatar %s has no image_url: %v", id, av)
		}
		urls[id] = u
		want, err := avatarart.StockPNG(id)
		if err != nil {
			t.Fatal(err)
		}
		got := h.get(u)
		if got.Status != http.StatusOK || got.Header.Get("Content-Type") != "image/png" || !bytes.Equal(got.Body, want) {
			t.Fatalf("GET %s: %d %s, %d bytes; want the %d bytes of %s's picture", u, got.Status, got.Header.Get("Content-Type"), len(got.Body), len(want), id)
		}
	}
	if one := h.do("GET", "/v1/avatars/av_stock_ben", key, nil).json(t); one["image_url"] != urls["av_stock_ben"] {
		t.Errorf("GET /v1/avatars/av_stock_ben: image_url %v, the list's %s", one["image_url"], urls["av_stock_ben"])
	}
	// Another avatar's path under this signature, or a changed signature.
	swapped := strings.Replace(urls["av_stock_ben"], "av_stock_ben", "av_stock_chen", 1)
	tampered := urls["av_stock_ben"][:len(urls["av_stock_ben"])-2] + "00"
	for _, u := range []string{swapped, tampered} {
		if r := h.get(u); r.Status != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", u, r.Status)
		}
	}
}

// An avatar is made by a farm task: pending until a node leases it,
// processing while the node works, ready with a signed image_url once the
// node uploaded its picture. Only then can an auto video use it, and the
// composite of that video gets the picture as an input.
func TestAvatarMadeByTheFarmAndUsedInAVideo(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 1000)
	_, otherKey := h.account("pro", 1000)
	cred := h.registerNode("cpu-1")
	id := h.do("POST", "/v1/avatars", key, promptAvatarReq()).json(t)["id"].(string)
	auto := func(key, avatar string) response {
		return h.do("POST", "/v1/videos", key, autoReq("avatar_id", avatar, "duration_seconds", 5))
	}

	e := expectAPIError(t, auto(key, id), http.StatusBadRequest, "invalid_request")
	if d := errDetails(t, e); d["field"] != "avatar_id" || d["status"] != "pending" {
		t.Fatalf("pending avatar as avatar_id: %v", e)
	}
	for _, bad := range []string{"av_nobody", "someone"} {
		e := expectAPIError(t, auto(key, bad), http.StatusBadRequest, "invalid_request")
		if d := errDetails(t, e); d["field"] != "avatar_id" || d["hint"] == nil {
			t.Fatalf("unknown avatar_id %s: %v", bad, e)
		}
	}

	a := h.leaseTask(cred, 5)
	if a.Kind != scheduler.KindAvatar || a.Video.ID != id || a.Avatar == nil || a.Avatar.Kind != "prompt" || a.Avatar.Prompt != "a cheerful woman in a red jacket" {
		t.Fatalf("avatar task %+v (job %+v)", a, a.Avatar)
	}
	if s := h.do("GET", "/v1/avatars/"+id, key, nil).json(t); s["status"] != "processing" || s["poll_interval_seconds"] == nil {
		t.Fatalf("leased avatar: %v", s)
	}
	h.runTask(cred, a, wire.ArtifactAvatar)
	ready := h.do("GET", "/v1/avatars/"+id, key, nil).json(t)
	imageURL, _ := ready["image_url"].(string)
	if ready["status"] != "ready" || imageURL == "" {
		t.Fatalf("made avatar: %v", ready)
	}
	picture := "videos/" + id + "/avatar/avatar.png"
	checkFile(t, imageURL, "image/png", "bytes of "+picture)

	// Another account cannot present with it; its owner can.
	if d := errDetails(t, expectAPIError(t, auto(otherKey, id), http.StatusBadRequest, "invalid_request")); d["field"] != "avatar_id" {
		t.Fatalf("another account's avatar: %v", d)
	}
	created := auto(key, id)
	if created.Status != http.StatusCreated {
		t.Fatalf("video with a ready avatar: %d %s", created.Status, created.Body)
	}
	vid := created.json(t)["id"].(string)
	plan := h.leaseTask(cred, 5)
	completeWithScenes(h, cred, plan, 1, "plan.json")
	for {
		task := h.leaseTask(cred, 5)
		if task.Video.ID != vid {
			t.Fatalf("leased %s while the video %s waits", task.TaskID, vid)
		}
		if task.Kind == scheduler.KindComposite {
			if task.Inputs[wire.InputAvatar] != picture {
				t.Fatalf("composite inputs %v: want %s = %s", task.Inputs, wire.InputAvatar, picture)
			}
			break
		}
		if _, own := task.Inputs[wire.InputAvatar]; own {
			t.Fatalf("%s got the avatar picture; only the composite needs it", task.Name)
		}
		h.runTask(cred, task, "out.bin")
	}
}

// checkFile GETs a signed file URL and checks its media type and bytes.
func checkFile(t *testing.T, fileURL, contentType, want string) {
	t.Helper()
	res, err := http.Get(fileURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != contentType || string(body) != want {
		t.Fatalf("GET %s: %d %q %q, want 200 %q %q", fileURL, res.StatusCode, res.Header.Get("Content-Type"), body, contentType, want)
	}
}

// completeWithScenes uploads files for a plan task and completes it with its
// scene count.
func completeWithScenes(h *harness, cred string, a wire.Assignment, scenes int, files ...string) {
	h.t.Helper()
	arts := map[string]string{}
	for _, f := range files {
		key := "videos/" + a.Video.ID + "/" + a.Name + "/" + f
		if r := h.agentCall("PUT", "/agent/v1/blobs/"+key+"?lease_token="+strconv.FormatUint(a.Token, 10), cred, []byte("{}")); r.Status != http.StatusCreated {
			h.t.Fatalf("upload %s: %d %s", key, r.Status, r.Body)
		}
		arts[f] = key
	}
	r := h.agentCall("POST", "/agent/v1/tasks/"+url.PathEscape(a.TaskID)+"/complete", cred, wire.CompleteRequest{Token: a.Token, Artifacts: arts, Scenes: scenes})
	if r.Status != http.StatusNoContent {
		h.t.Fatalf("complete %s: %d %s", a.TaskID, r.Status, r.Body)
	}
}

// Avatar creates and speech samples share the contract's media budget: five
// a minute per account, taken only by valid requests.
func TestMediaRateLimit(t *testing.T) {
	h := start(t, withLimits(api.ContractLimits()), withAgent(30*time.Second), withSpeechWait(time.Millisecond))
	_, key := h.account("pro", 0)
	_, otherKey := h.account("pro", 0)
	h.registerVoiceNode("tts", testVoices...)
	expectAPIError(t, h.do("POST", "/v1/avatars", key, promptAvatarReq("kind", "x")), http.StatusBadRequest, "invalid_request")
	for i := range 4 {
		if r := h.do("POST", "/v1/avatars", key, promptAvatarReq()); r.Status != http.StatusCreated {
			t.Fatalf("avatar %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	sp := h.do("POST", "/v1/voices/speech", key, map[string]any{"text": "hi", "voice_id": "en-us"})
	if sp.Status != http.StatusAccepted && sp.Status != http.StatusOK {
		t.Fatalf("5th media request (speech): %d %s", sp.Status, sp.Body)
	}
	r := h.do("POST", "/v1/avatars", key, promptAvatarReq())
	e := expectAPIError(t, r, http.StatusTooManyRequests, "rate_limited")
	if r.Header.Get("Retry-After") == "" || errDetails(t, e)["limit"] != "5 per minute" {
		t.Fatalf("6th media request: %v %v", r.Header, e)
	}
	if r := h.do("POST", "/v1/avatars", otherKey, promptAvatarReq()); r.Status != http.StatusCreated {
		t.Fatalf("another account's budget: %d %s", r.Status, r.Body)
	}
}
