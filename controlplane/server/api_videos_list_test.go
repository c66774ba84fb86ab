package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// TestAPIListVideos covers GET /v1/videos: newest first, filters, limit, count and
// total, paging, unknown parameters and isolation between accounts.
func TestAPIListVideos(t *testing.T) {
	t.Parallel()
	h := start(t)
	_, key := h.account("pro", 1000)
	_, otherKey := h.account("pro", 1000)
	folder := expectAPIStatus(t, h.do("POST", "/v1/folders", key, map[string]any{"name": "f"}), http.StatusCreated)["id"].(string)

	// 23 videos: every third in the folder. Created in order, so the listing must
	// come back in reverse.
	var created []string
	inFolder := map[string]bool{}
	for i := 0; i < 23; i++ {
		body := autoReq("duration_seconds", 5, "name", fmt.Sprintf("v%02d", i))
		if i%3 == 0 {
			body["folder_id"] = folder
		}
		v := h.create(key, body)
		created = append(created, v["id"].(string))
		if i%3 == 0 {
			inFolder[v["id"].(string)] = true
		}
	}
	otherVideo := h.create(otherKey, autoReq("duration_seconds", 5))["id"].(string)
	// Fail two of them so the status filter has something to separate.
	failed := map[string]bool{created[4]: true, created[9]: true}
	for id := range failed {
		if _, err := h.admin.FailVideo(context.Background(), id, "test"); err != nil {
			t.Fatal(err)
		}
	}

	list := func(t *testing.T, query string) (ids []string, body map[string]any) {
		t.Helper()
		body = expectAPIStatus(t, h.do("GET", "/v1/videos"+query, key, nil), http.StatusOK)
		data, ok := body["data"].([]any)
		if !ok {
			t.Fatalf("no data array: %v", body)
		}
		for _, item := range data {
			v := item.(map[string]any)
			if v["object"] != "video" {
				t.Fatalf("list item is not a video: %v", v)
			}
			if v["id"] == otherVideo {
				t.Fatalf("another account's video is listed")
			}
			ids = append(ids, v["id"].(string))
		}
		if jsonInt(t, body["count"]) != int64(len(ids)) {
			t.Fatalf("count %v but %d items", body["count"], len(ids))
		}
		return ids, body
	}
	newest := func(n int, keep func(string) bool) []string {
		var out []string
		for i := len(created) - 1; i >= 0 && len(out) < n; i-- {
			if keep == nil || keep(created[i]) {
				out = append(out, created[i])
			}
		}
		return out
	}

	t.Run("default limit 20, newest first", func(t *testing.T) {
		ids, body := list(t, "")
		if !jsonEqual(t, ids, newest(20, nil)) {
			t.Fatalf("order: got %v, want %v", ids, newest(20, nil))
		}
		if jsonInt(t, body["total"]) != 23 || body["has_more"] != true {
			t.Fatalf("total %v has_more %v, want 23 and true", body["total"], body["has_more"])
		}
	})

	t.Run("limit bounds", func(t *testing.T) {
		for _, c := range []struct {
			limit string
			n     int
		}{{"1", 1}, {"5", 5}, {"23", 23}, {"100", 23}} {
			ids, body := list(t, "?limit="+c.limit)
			if len(ids) != c.n || jsonInt(t, body["total"]) != 23 || body["has_more"] != (c.n < 23) {
				t.Fatalf("limit %s: %d items, body %v", c.limit, len(ids), body)
			}
		}
		for _, bad := range []string{"0", "101", "-1", "x", "", "1.5", "20abc"} {
			r := h.do("GET", "/v1/videos?limit="+bad, key, nil)
			e := expectAPIError(t, r, http.StatusBadRequest, "invalid_request")
			if errDetails(t, e)["field"] != "limit" {
				t.Fatalf("limit=%s: %s", bad, r.Body)
			}
		}
	})

	t.Run("paging with starting_after", func(t *testing.T) {
		var all []string
		after := ""
		for page := 0; ; page++ {
			q := "?limit=7"
			if after != "" {
				q += "&starting_after=" + after
			}
			ids, body := list(t, q)
			if jsonInt(t, body["total"]) != 23 {
				t.Fatalf("total changes while paging: %v", body["total"])
			}
			all = append(all, ids...)
			if body["has_more"] != true {
				break
			}
			if page > 5 {
				t.Fatalf("paging does not end")
			}
			after = ids[len(ids)-1]
		}
		if !jsonEqual(t, all, newest(23, nil)) {
			t.Fatalf("pages joined: %v, want %v", all, newest(23, nil))
		}
		expectAPIError(t, h.do("GET", "/v1/videos?starting_after="+otherVideo, key, nil), http.StatusBadRequest, "invalid_request")
	})

	t.Run("status filter", func(t *testing.T) {
		ids, body := list(t, "?status=failed")
		want := newest(23, func(id string) bool { return failed[id] })
		if !jsonEqual(t, ids, want) || jsonInt(t, body["total"]) != 2 || body["has_more"] != false {
			t.Fatalf("status=failed: %v (body %v), want %v", ids, body, want)
		}
		ids, body = list(t, "?status=queued&limit=100")
		if len(ids) != 21 || jsonInt(t, body["total"]) != 21 {
			t.Fatalf("status=queued: %d items, total %v", len(ids), body["total"])
		}
		ids, _ = list(t, "?status=completed")
		if len(ids) != 0 {
			t.Fatalf("status=completed: %v", ids)
		}
		expectAPIError(t, h.do("GET", "/v1/videos?status=done", key, nil), http.StatusBadRequest, "invalid_request")
	})

	t.Run("folder filter", func(t *testing.T) {
		ids, body := list(t, "?folder_id="+folder)
		want := newest(23, func(id string) bool { return inFolder[id] })
		if !jsonEqual(t, ids, want) || jsonInt(t, body["total"]) != int64(len(want)) {
			t.Fatalf("folder_id: %v, want %v", ids, want)
		}
		ids, body = list(t, "?folder_id="+folder+"&status=failed")
		if len(ids) != 1 || ids[0] != created[9] || jsonInt(t, body["total"]) != 1 {
			t.Fatalf("folder_id and status=failed: %v", ids)
		}
		ids, body = list(t, "?folder_id="+folder+"&limit=2")
		if len(ids) != 2 || body["has_more"] != true || jsonInt(t, body["total"]) != int64(len(want)) {
			t.Fatalf("folder_id with limit 2: %v %v", ids, body)
		}
	})

	t.Run("unknown query parameter", func(t *testing.T) {
		for _, q := range []string{"?sort=asc", "?page=2", "?Status=failed", "?limit=5&offset=5"} {
			expectAPIError(t, h.do("GET", "/v1/videos"+q, key, nil), http.StatusBadRequest, "invalid_request")
		}
	})

	t.Run("other accounts", func(t *testing.T) {
		body := expectAPIStatus(t, h.do("GET", "/v1/videos", otherKey, nil), http.StatusOK)
		data := body["data"].([]any)
		if len(data) != 1 || data[0].(map[string]any)["id"] != otherVideo || jsonInt(t, body["total"]) != 1 {
			t.Fatalf("other account's listing: %v", body)
		}
		expectAPIError(t, h.do("GET", "/v1/videos/"+created[0], otherKey, nil), http.StatusNotFound, "not_found")
		expectAPIError(t, h.do("GET", "/v1/videos/"+otherVideo, key, nil), http.StatusNotFound, "not_found")
		expectAPIError(t, h.do("GET", "/v1/videos/vid_doesnotexist", key, nil), http.StatusNotFound, "not_found")
		_, emptyKey := h.account("max", 0)
		body = expectAPIStatus(t, h.do("GET", "/v1/videos", emptyKey, nil), http.StatusOK)
		if d, ok := body["data"].([]any); !ok || len(d) != 0 || jsonInt(t, body["total"]) != 0 || body["has_more"] != false {
			t.Fatalf("empty listing: %v", body)
		}
	})
}
