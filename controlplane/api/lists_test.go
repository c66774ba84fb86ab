package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// anyList is a list answer with items read as objects.
type anyList struct {
	Object  string           `json:"object"`
	Data    []map[string]any `json:"data"`
	Count   int              `json:"count"`
	Total   int              `json:"total"`
	HasMore bool             `json:"has_more"`
}

func (e *env) list(key, path string) anyList {
	e.tb.Helper()
	r := e.do(http.MethodGet, path, key, "").wantStatus(e.tb, http.StatusOK)
	var l anyList
	if err := json.Unmarshal(r.Body, &l); err != nil {
		e.tb.Fatalf("GET %s: %v: %s", path, err, r.Body)
	}
	if l.Object != "list" || l.Count != len(l.Data) {
		e.tb.Fatalf("GET %s: not the list shape: %s", path, r.Body)
	}
	return l
}

// pageAll follows starting_after from path (which carries its own query, at
// least limit) while has_more, and returns the ids in the order seen.
func (e *env) pageAll(key, path string) []string {
	e.tb.Helper()
	var ids []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 50 {
			e.tb.Fatalf("GET %s: paging does not end", path)
		}
		p := path
		if after != "" {
			p += "&starting_after=" + after
		}
		l := e.list(key, p)
		for _, it := range l.Data {
			ids = append(ids, it["id"].(string))
		}
		if !l.HasMore {
			return ids
		}
		if len(l.Data) == 0 {
			e.tb.Fatalf("GET %s: has_more with an empty page", p)
		}
		after = l.Data[len(l.Data)-1]["id"].(string)
	}
}

// wantQueryError checks a 400 invalid_request naming field whose message says says.
func wantQueryError(t *testing.T, r response, field, says string) {
	t.Helper()
	er := r.wantError(t, http.StatusBadRequest, "invalid_request")
	d, _ := er["details"].(map[string]any)
	if d["field"] != field || !strings.Contains(er["message"].(string), says) {
		t.Errorf("want field %s and a message saying %q: %s", field, says, r.Body)
	}
}

func TestListAvatarsPagesWithStartingAfter(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	var own []string
	for i := range 3 {
		r := e.do(http.MethodPost, "/v1/avatars", key, fmt.Sprintf(`{"kind":"prompt","prompt":"presenter %d","gender":"female"}`, i)).
			wantStatus(t, http.StatusCreated)
		own = append(own, r.json(t)["id"].(string))
	}
	slices.Reverse(own) // newest first

	whole := e.list(key, "/v1/avatars?limit=100")
	if whole.Total != 3+6 || whole.HasMore {
		t.Fatalf("own and stock avatars: total %d has_more %v", whole.Total, whole.HasMore)
	}
	var want []string
	for _, it := range whole.Data {
		want = append(want, it["id"].(string))
	}
	if !slices.Equal(want[:3], own) {
		t.Fatalf("own avatars first, newest first: %v, made %v", want, own)
	}

	first := e.list(key, "/v1/avatars?limit=2")
	if first.Count != 2 || first.Total != 9 || !first.HasMore {
		t.Fatalf("first page: %+v", first)
	}
	// Pages of two cross from the account's avatars to the stock presenters
	// and end with has_more false, each avatar once.
	if got := e.pageAll(key, "/v1/avatars?limit=2"); !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	// Filters and paging combine; total counts the filtered list.
	second := e.list(key, "/v1/avatars?view=characters&gender=female&limit=2&starting_after="+own[1])
	if second.Total != 3+3 || second.Data[0]["id"] != own[2] || !second.HasMore {
		t.Fatalf("female avatars after %s: %+v", own[1], second)
	}
	if got := e.pageAll(key, "/v1/avatars?view=catalogue&limit=4"); len(got) != 6 || !slices.Equal(got, want[3:]) {
		t.Fatalf("catalogue paged %v", got)
	}

	for _, c := range []struct{ query, field, says string }{
		{"starting_after=av_nobody", "starting_after", "starting_after must be the id"},
		// An own avatar is not in the catalogue view.
		{"view=catalogue&starting_after=" + own[0], "starting_after", "starting_after must be the id"},
		{"starting_after=x&starting_after=y", "starting_after", "2 times"},
		{"limit=101", "limit", "1 to 100"},
		{"page=2", "page", `unknown query parameter "page"; use view, search, gender, limit, starting_after`},
	} {
		wantQueryError(t, e.do(http.MethodGet, "/v1/avatars?"+c.query, key, ""), c.field, c.says)
	}
}

func TestListFoldersPages(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	_, otherKey := e.account("pro", 0)
	var made []string
	for i := range 5 {
		r := e.do(http.MethodPost, "/v1/folders", key, fmt.Sprintf(`{"name":"folder %d"}`, i)).wantStatus(t, http.StatusCreated)
		made = append(made, r.json(t)["id"].(string))
	}
	all := e.list(key, "/v1/folders")
	if all.Count != 5 || all.Total != 5 || all.HasMore {
		t.Fatalf("five folders, default page: %+v", all)
	}
	if f := all.Data[0]; f["id"] != made[0] || f["object"] != "folder" || f["name"] != "folder 0" {
		t.Fatalf("oldest first, folder shape: %v", f)
	}
	one := e.list(key, "/v1/folders?limit=1")
	if one.Count != 1 || one.Total != 5 || !one.HasMore || one.Data[0]["id"] != made[0] {
		t.Fatalf("limit=1: %+v", one)
	}
	if got := e.pageAll(key, "/v1/folders?limit=2"); !slices.Equal(got, made) {
		t.Fatalf("paged %v, made %v", got, made)
	}
	if last := e.list(key, "/v1/folders?starting_after="+made[4]); last.Count != 0 || last.HasMore || last.Total != 5 {
		t.Fatalf("after the last folder: %+v", last)
	}
	for _, c := range []struct{ query, field, says string }{
		{"starting_after=fld_nope", "starting_after", "starting_after must be the id"},
		{"limit=0", "limit", "1 to 100"},
		{"limit=101", "limit", "1 to 100"},
		{"foo=1", "foo", `unknown query parameter "foo"; use limit, starting_after`},
		{"limit=1&limit=2", "limit", "2 times"},
	} {
		wantQueryError(t, e.do(http.MethodGet, "/v1/folders?"+c.query, key, ""), c.field, c.says)
	}
	// Another account's folder is no cursor here.
	wantQueryError(t, e.do(http.MethodGet, "/v1/folders?starting_after="+made[0], otherKey, ""), "starting_after", "starting_after must be the id")
}

func TestWholeListsRefuseQueryParameters(t *testing.T) {
	e := newEnv(t)
	acct, key := e.account("pro", 0)
	// Registered through Raft: the tests' webhook guard resolves no name.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.node.Apply(ctx, &fsm.CreateWebhook{WebhookID: "whk_one", AccountID: acct, URL: "https://example.com/hook",
		Events: []string{"video.completed"}, Secret: "sealed", Now: time.Now().UnixNano()}); err != nil {
		t.Fatal(err)
	}

	if l := e.list(key, "/v1/models"); l.Count != 32 || l.Total != 32 || l.HasMore {
		t.Fatalf("models: count %d total %d has_more %v", l.Count, l.Total, l.HasMore)
	}
	if l := e.list(key, "/v1/webhooks"); l.Count != 1 || l.Total != 1 || l.HasMore || l.Data[0]["secret"] != nil {
		t.Fatalf("webhooks: %+v", l)
	}
	for _, path := range []string{"/v1/models", "/v1/webhooks"} {
		for _, c := range []struct{ query, field, says string }{
			{"limit=1", "limit", `query parameter "limit" is not taken here: GET ` + path + " returns the whole list in one page"},
			{"starting_after=x", "starting_after", "returns the whole list in one page"},
			{"foo=1", "foo", `unknown query parameter "foo"; GET ` + path + " takes none"},
			{"zeta=1&alpha=2", "alpha", `unknown query parameter "alpha", "zeta"`},
			{"foo=1&limit=5", "limit", "is not taken here"},
		} {
			r := e.do(http.MethodGet, path+"?"+c.query, key, "")
			wantQueryError(t, r, c.field, c.says)
			if d, _ := r.errorOf(t)["details"].(map[string]any); d["allowed"] == nil {
				t.Errorf("%s?%s: no details.allowed: %s", path, c.query, r.Body)
			}
		}
	}
}

// Every list names an unknown query parameter in the same 400.
func TestListsRefuseUnknownQueryParameters(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	for _, path := range []string{"/v1/videos", "/v1/assets", "/v1/brand-kits", "/v1/voices", "/v1/avatars",
		"/v1/folders", "/v1/models", "/v1/webhooks", "/v1/events"} {
		wantQueryError(t, e.do(http.MethodGet, path+"?foo=1", key, ""), "foo", `unknown query parameter "foo"`)
	}
}

func TestListVoicesRefusesUnknownCursor(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	e.registerVoices("tts-1", espeakLike())
	for _, after := range []string{"zzzz", "en", "EN-US"} {
		wantQueryError(t, e.do(http.MethodGet, "/v1/voices?starting_after="+after, key, ""), "starting_after", `"`+after+`" is not a voice`)
	}
	// The cursor need not match the filters: a client that changes them
	// keeps its place.
	if l := e.voices(key, "language=fr&starting_after=en-us"); l.Total != 7 || l.Count != 7 || l.Data[0].ID != "fr-fr" {
		t.Fatalf("french voices after en-us: %+v", l)
	}
	if l := e.voices(key, "language=en&starting_after=fr-fr"); l.Total != 21 || l.Count != 0 || l.HasMore {
		t.Fatalf("english voices after fr-fr: %+v", l)
	}
}
