package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/blob"
)

// TestAPIFreePreview walks a free account through its one preview project, the
// preview still, the refused second project, the upgrade and the free render.
func TestAPIFreePreview(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	acct, key := h.account("free", 0)
	_, otherKey := h.account("pro", 100)

	if h.me(key)["free_video_available"] != true {
		t.Fatalf("a new free account has no free video")
	}
	v := h.create(key, autoReq("duration_seconds", 60, "name", "my first"))
	id := v["id"].(string)
	if v["status"] != "preview" || jsonInt(t, v["credits_charged"]) != 0 {
		t.Fatalf("free project: want status preview charged 0, got %v", v)
	}
	p, ok := v["preview"].(map[string]any)
	if !ok {
		t.Fatalf("preview object missing: %v", v)
	}
	for _, f := range []string{"image_url", "image_note", "message", "upgrade_url"} {
		if s, _ := p[f].(string); strings.TrimSpace(s) == "" {
			t.Fatalf("preview.%s missing: %v", f, p)
		}
	}
	if !strings.HasPrefix(p["upgrade_url"].(string), "https://") {
		t.Fatalf("preview.upgrade_url = %v", p["upgrade_url"])
	}
	if h.me(key)["free_video_available"] != false {
		t.Fatalf("free_video_available still true after the preview")
	}
	if h.balance(key) != 0 {
		t.Fatalf("a preview charged credits")
	}

	t.Run("preview still", func(t *testing.T) {
		r := h.get(p["image_url"].(string))
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("preview image: %d %q %.200s", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		im, err := png.Decode(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("preview image is not a PNG: %v", err)
		}
		b := im.Bounds()
		if b.Dx() < 16 || b.Dy() < 16 || b.Dx() > 640 || b.Dy() > 640 {
			t.Fatalf("preview image is %dx%d, want a small still", b.Dx(), b.Dy())
		}
		// GET of the video offers a working URL too.
		g := expectAPIStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), http.StatusOK)
		u := g["preview"].(map[string]any)["image_url"].(string)
		if r := h.get(u); r.Status != http.StatusOK {
			t.Fatalf("preview URL from GET: %d", r.Status)
		}
	})

	t.Run("tampered or expired preview URL refused", func(t *testing.T) {
		u, err := url.Parse(p["image_url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		sig := q.Get("signature")
		variants := map[string]func(q url.Values, u *url.URL){
			"signature changed": func(q url.Values, _ *url.URL) {
				q.Set("signature", sig[:len(sig)-1]+flipChar(sig[len(sig)-1]))
			},
			"signature missing": func(q url.Values, _ *url.URL) { q.Del("signature") },
			"signature garbage": func(q url.Values, _ *url.URL) { q.Set("signature", "zz") },
			"expiry extended":   func(q url.Values, _ *url.URL) { q.Set("expires", "99999999999") },
			"expiry missing":    func(q url.Values, _ *url.URL) { q.Del("expires") },
			"other video": func(_ url.Values, u *url.URL) {
				u.Path = "/files/previews/vid_someoneelse.png"
			},
		}
		for name, change := range variants {
			u2 := *u
			q2 := url.Values{}
			for k, vs := range q {
				q2[k] = append([]string(nil), vs...)
			}
			change(q2, &u2)
			u2.RawQuery = q2.Encode()
			r := h.get(u2.String())
			if r.Status != http.StatusForbidden && r.Status != http.StatusNotFound {
				t.Fatalf("%s: want the URL refused, got %d", name, r.Status)
			}
			r.errorCode(t)
		}
		// A correctly signed URL whose time has passed is refused too.
		raw, err := os.ReadFile(filepath.Join(h.cfg.DataDir, "blob.key"))
		if err != nil {
			t.Fatalf("read blob key: %v", err)
		}
		k, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		s := blob.Signer{Key: k, BaseURL: h.base}
		path := "/files/previews/" + id + ".png"
		if r := h.get(s.URL(path, time.Now().Add(time.Hour))); r.Status != http.StatusOK {
			t.Fatalf("URL signed with the server's key refused: %d %s", r.Status, r.Body)
		}
		r := h.get(s.URL(path, time.Now().Add(-time.Minute)))
		if r.Status != http.StatusForbidden {
			t.Fatalf("expired URL: %d %s", r.Status, r.Body)
		}
		r.errorCode(t)
	})

	t.Run("second project refused", func(t *testing.T) {
		for _, body := range []map[string]any{autoReq("duration_seconds", 5), manualReq("model", "veo-3")} {
			r := h.do("POST", "/v1/videos", key, body)
			e := expectAPIError(t, r, http.StatusForbidden, "free_limit_reached")
			if u, _ := errLinks(t, e)["upgrade"].(string); !strings.HasPrefix(u, "https://") {
				t.Fatalf("links.upgrade = %v", errLinks(t, e)["upgrade"])
			}
		}
		// A second key of the account gets no second project either.
		_, key2 := h.newKey(acct)
		expectAPIError(t, h.do("POST", "/v1/videos", key2, autoReq()), http.StatusForbidden, "free_limit_reached")
		if h.total(key) != 1 {
			t.Fatalf("refused projects were created: total %d", h.total(key))
		}
	})

	t.Run("render before upgrade", func(t *testing.T) {
		r := h.do("POST", "/v1/videos/"+id+"/render", key, nil)
		e := expectAPIError(t, r, http.StatusForbidden, "upgrade_required")
		if u, _ := errLinks(t, e)["upgrade"].(string); !strings.HasPrefix(u, "https://") {
			t.Fatalf("links.upgrade = %v", errLinks(t, e)["upgrade"])
		}
		g := expectAPIStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), http.StatusOK)
		if g["status"] != "preview" {
			t.Fatalf("refused render changed the status to %v", g["status"])
		}
	})

	t.Run("another account cannot render it", func(t *testing.T) {
		expectAPIError(t, h.do("POST", "/v1/videos/"+id+"/render", otherKey, nil), http.StatusNotFound, "not_found")
		expectAPIError(t, h.do("GET", "/v1/videos/"+id, otherKey, nil), http.StatusNotFound, "not_found")
		expectAPIError(t, h.do("POST", "/v1/videos/vid_nope/render", key, nil), http.StatusNotFound, "not_found")
	})

	t.Run("render after upgrade", func(t *testing.T) {
		if _, err := h.admin.SetPlan(ctx, acct, "pro"); err != nil {
			t.Fatal(err)
		}
		// The upgraded account has no credits at all: the first video is still free.
		expectAPIError(t, h.do("POST", "/v1/videos/"+id+"/render", key, map[string]any{"x": 1}), http.StatusBadRequest, "invalid_request")
		for i, body := range []any{nil, map[string]any{}} {
			r := h.do("POST", "/v1/videos/"+id+"/render", key, body)
			v := expectAPIStatus(t, r, http.StatusOK)
			if v["id"] != id || jsonInt(t, v["credits_charged"]) != 0 {
				t.Fatalf("render call %d: %s", i+1, r.Body)
			}
			if i == 0 && v["status"] != "queued" {
				t.Fatalf("first render: status %v, want queued", v["status"])
			}
			if v["status"] == "preview" {
				t.Fatalf("render call %d left the video in preview", i+1)
			}
			if h.balance(key) != 0 {
				t.Fatalf("render charged: balance %d, want 0", h.balance(key))
			}
		}
		if h.total(key) != 1 {
			t.Fatalf("render created another video: total %d", h.total(key))
		}
		if h.me(key)["free_video_available"] != false {
			t.Fatalf("premium account shows free_video_available")
		}
		// A premium account's own videos are not previews and cannot go through render.
		if _, err := h.admin.GrantCredits(ctx, acct, 50); err != nil {
			t.Fatal(err)
		}
		paid := h.create(key, autoReq("duration_seconds", 5))
		if paid["status"] != "queued" || jsonInt(t, paid["credits_charged"]) != 3 {
			t.Fatalf("paid video after upgrade: %v", paid)
		}
		r := h.do("POST", "/v1/videos/"+paid["id"].(string)+"/render", key, nil)
		expectAPIError(t, r, http.StatusBadRequest, "invalid_request")
		if h.balance(key) != 47 {
			t.Fatalf("balance %d, want 47", h.balance(key))
		}
	})

	t.Run("render on a paid video of a premium account", func(t *testing.T) {
		pv := h.create(otherKey, autoReq("duration_seconds", 5))
		expectAPIError(t, h.do("POST", "/v1/videos/"+pv["id"].(string)+"/render", otherKey, nil), http.StatusBadRequest, "invalid_request")
	})
}

// TestAPIFreeProjectIsAtomic races creates from several keys of one free account:
// exactly one preview is created, every other request gets free_limit_reached.
func TestAPIFreeProjectIsAtomic(t *testing.T) {
	t.Parallel()
	h := start(t)
	acct, key := h.account("free", 0)
	_, key2 := h.newKey(acct)
	_, key3 := h.newKey(acct)
	var keys []string
	for i := 0; i < 4; i++ {
		keys = append(keys, key, key2, key3)
	}
	statuses, codes := h.concurrently(keys, autoReq("duration_seconds", 5))
	created := 0
	for i, s := range statuses {
		switch {
		case s == http.StatusCreated:
			created++
		case s == http.StatusForbidden && codes[i] == "free_limit_reached":
		default:
			t.Fatalf("concurrent free create: %d %s", s, codes[i])
		}
	}
	if created != 1 || h.total(key) != 1 {
		t.Fatalf("%d previews created (total %d), want exactly 1", created, h.total(key))
	}
	if h.me(key2)["free_video_available"] != false {
		t.Fatalf("free_video_available still true")
	}
}
