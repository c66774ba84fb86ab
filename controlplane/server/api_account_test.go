package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/models"
)

// TestAPIMe covers the account object of GET /v1/me for free and premium plans and
// after an operator grants credits or changes the plan.
func TestAPIMe(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()

	check := func(key, plan string, premium bool, credits int64, free bool) {
		t.Helper()
		me := h.me(key)
		if me["object"] != "account" || me["plan"] != plan || me["premium"] != premium ||
			jsonInt(t, me["credits"]) != credits || me["free_video_available"] != free {
			t.Fatalf("want plan %s premium %v credits %d free_video_available %v, got %v", plan, premium, credits, free, me)
		}
		l, ok := me["links"].(map[string]any)
		if !ok {
			t.Fatalf("GET /v1/me without links: %v", me)
		}
		for _, name := range []string{"buy_credits", "upgrade"} {
			if u, _ := l[name].(string); !strings.HasPrefix(u, "https://") {
				t.Fatalf("links.%s = %q, want an https address", name, l[name])
			}
		}
	}

	freeAcct, freeKey := h.account("free", 0)
	proAcct, proKey := h.account("pro", 250)
	_, maxKey := h.account("max", 7)
	check(freeKey, "free", false, 0, true)
	check(proKey, "pro", true, 250, false)
	check(maxKey, "max", true, 7, false)

	if _, err := h.admin.GrantCredits(ctx, proAcct, 50); err != nil {
		t.Fatal(err)
	}
	check(proKey, "pro", true, 300, false)
	if _, err := h.admin.GrantCredits(ctx, freeAcct, 20); err != nil {
		t.Fatal(err)
	}
	check(freeKey, "free", false, 20, true)

	if _, err := h.admin.SetPlan(ctx, freeAcct, "max"); err != nil {
		t.Fatal(err)
	}
	check(freeKey, "max", true, 20, false)
	if _, err := h.admin.SetPlan(ctx, proAcct, "free"); err != nil {
		t.Fatal(err)
	}
	check(proKey, "free", false, 300, true)
}

// TestAPIModels covers GET /v1/models: the whole catalog of 32 with the fields the
// contract names, and styles always an array.
func TestAPIModels(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("free", 0)
	r := h.do("GET", "/v1/models", key, nil)
	body := expectAPIStatus(t, r, http.StatusOK)
	data, ok := body["data"].([]any)
	if !ok {
		t.Fatalf("no data array: %s", r.Body)
	}
	if len(data) != 32 || jsonInt(t, body["count"]) != 32 || jsonInt(t, body["total"]) != 32 {
		t.Fatalf("want 32 models (count and total 32), got %d, count %v, total %v", len(data), body["count"], body["total"])
	}
	seen := map[string]bool{}
	for _, item := range data {
		m := item.(map[string]any)
		id, _ := m["id"].(string)
		if seen[id] {
			t.Fatalf("model %q listed twice", id)
		}
		seen[id] = true
		want, ok := models.Get(id)
		if !ok {
			t.Fatalf("GET /v1/models lists %q, which the catalog does not have", id)
		}
		for _, f := range []string{"operations", "resolutions", "durations", "aspect_ratios", "styles"} {
			arr, ok := m[f].([]any)
			if !ok {
				t.Fatalf("%s: %s is %T, want an array (never null)", id, f, m[f])
			}
			if f != "styles" && len(arr) == 0 {
				t.Fatalf("%s: %s is empty", id, f)
			}
		}
		cps, ok := m["credits_per_second"].(map[string]any)
		if !ok || len(cps) == 0 {
			t.Fatalf("%s: credits_per_second is %T %v, want an object", id, m["credits_per_second"], m["credits_per_second"])
		}
		for _, res := range m["resolutions"].([]any) {
			if c := jsonInt(t, cps[res.(string)]); c <= 0 {
				t.Fatalf("%s: no positive price for resolution %v", id, res)
			}
		}
		for _, f := range []struct {
			name string
			want any
		}{
			{"operations", want.Operations}, {"resolutions", want.Resolutions}, {"durations", want.Durations},
			{"aspect_ratios", want.AspectRatios}, {"styles", want.Styles}, {"credits_per_second", want.CreditsPerSecond},
		} {
			if !jsonEqual(t, m[f.name], f.want) {
				t.Fatalf("%s: %s = %v, catalog has %v", id, f.name, m[f.name], f.want)
			}
		}
	}
	for _, id := range models.IDs() {
		if !seen[id] {
			t.Fatalf("catalog model %q missing from GET /v1/models", id)
		}
	}
}

// TestAPIFolders covers folder creation and validation, the listing, filing a
// video in a folder and refusing another account's folder.
func TestAPIFolders(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 100)
	_, otherKey := h.account("pro", 100)

	r := h.do("POST", "/v1/folders", key, map[string]any{"name": "Campaign Q3"})
	f := expectAPIStatus(t, r, http.StatusCreated)
	id, _ := f["id"].(string)
	if !strings.HasPrefix(id, "fld_") || f["name"] != "Campaign Q3" || jsonInt(t, f["created_at"]) <= 0 {
		t.Fatalf("folder answer: %s", r.Body)
	}
	f2 := expectAPIStatus(t, h.do("POST", "/v1/folders", key, map[string]any{"name": "Ünïcödé " + strings.Repeat("é", 91)}), http.StatusCreated)

	for _, c := range []struct {
		name  string
		body  any
		field string
	}{
		{"missing name", map[string]any{}, "name"},
		{"empty name", map[string]any{"name": ""}, "name"},
		{"blank name", map[string]any{"name": "   "}, "name"},
		{"name too long", map[string]any{"name": strings.Repeat("x", 101)}, "name"},
		{"unknown field", map[string]any{"name": "ok", "color": "red"}, "color"},
		{"name not a string", map[string]any{"name": 5}, "name"},
		{"name an array", map[string]any{"name": []string{"a"}}, "name"},
		{"body not an object", `["name"]`, ""},
		{"empty body", "", ""},
		{"trailing data", `{"name":"a"} {}`, ""},
	} {
		r := h.do("POST", "/v1/folders", key, c.body)
		e := expectAPIError(t, r, http.StatusBadRequest, "invalid_request")
		if c.field != "" && errDetails(t, e)["field"] != c.field {
			t.Fatalf("%s: want details.field %q, got %s", c.name, c.field, r.Body)
		}
	}

	list := expectAPIStatus(t, h.do("GET", "/v1/folders", key, nil), http.StatusOK)
	data := list["data"].([]any)
	if len(data) != 2 || jsonInt(t, list["count"]) != 2 || jsonInt(t, list["total"]) != 2 {
		t.Fatalf("want the 2 folders, got %v", list)
	}
	ids := map[string]bool{}
	for _, item := range data {
		m := item.(map[string]any)
		if m["name"] == nil || m["created_at"] == nil {
			t.Fatalf("folder in list lacks name or created_at: %v", m)
		}
		ids[m["id"].(string)] = true
	}
	if !ids[id] || !ids[f2["id"].(string)] {
		t.Fatalf("list %v lacks a created folder", data)
	}
	other := expectAPIStatus(t, h.do("GET", "/v1/folders", otherKey, nil), http.StatusOK)
	if len(other["data"].([]any)) != 0 || jsonInt(t, other["total"]) != 0 {
		t.Fatalf("another account sees folders: %v", other)
	}

	// A video filed in the folder echoes folder_id; the listing filter finds it.
	v := h.create(key, map[string]any{"mode": "auto", "prompt": "in a folder", "duration_seconds": 5, "folder_id": id})
	if v["folder_id"] != id {
		t.Fatalf("video folder_id = %v, want %s", v["folder_id"], id)
	}
	root := h.create(key, map[string]any{"mode": "auto", "prompt": "at the root", "duration_seconds": 5})
	if root["folder_id"] != nil {
		t.Fatalf("a video sent without folder_id is filed in %v", root["folder_id"])
	}
	got := expectAPIStatus(t, h.do("GET", "/v1/videos/"+v["id"].(string), key, nil), http.StatusOK)
	if got["folder_id"] != id {
		t.Fatalf("GET video folder_id = %v", got["folder_id"])
	}

	// Another account's folder (or an unknown one) is refused, and nothing is charged.
	before := h.balance(otherKey)
	for _, fid := range []string{id, "fld_unknown"} {
		r := h.do("POST", "/v1/videos", otherKey, map[string]any{"mode": "auto", "prompt": "x", "folder_id": fid})
		e := expectAPIError(t, r, http.StatusBadRequest, "invalid_request")
		if errDetails(t, e)["field"] != "folder_id" {
			t.Fatalf("want details.field folder_id: %s", r.Body)
		}
		r = h.do("GET", "/v1/videos?folder_id="+fid, otherKey, nil)
		expectAPIError(t, r, http.StatusBadRequest, "invalid_request")
	}
	if h.balance(otherKey) != before || h.total(otherKey) != 0 {
		t.Fatalf("a refused folder_id charged or created a video")
	}
}
