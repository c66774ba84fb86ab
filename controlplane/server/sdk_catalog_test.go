package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// RenderVideo renders a free account's preview once it upgraded: refused
// before, queued and free after, the same video when called again; a video
// that was not a preview, or another account's, is refused.
func TestSDKRenderVideo(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	acct, key := h.account("free", 0)
	c := sdkClient(t, h.base, key)
	preview, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "a lighthouse at dusk", DurationSeconds: 30})
	if err != nil || preview.Status != client.StatusPreview {
		t.Fatalf("free project: %+v (%v)", preview, err)
	}

	_, err = c.RenderVideo(ctx, preview.ID)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != client.CodeUpgradeRequired || !strings.HasPrefix(e.Links["upgrade"], "https://") {
		t.Fatalf("render before the upgrade: %v", err)
	}
	if _, err := h.admin.SetPlan(ctx, acct, "pro"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		v, err := c.RenderVideo(ctx, preview.ID)
		if err != nil {
			t.Fatalf("render call %d: %v", i+1, err)
		}
		if v.ID != preview.ID || v.CreditsCharged != 0 || v.Status == client.StatusPreview || (i == 0 && v.Status != client.StatusQueued) {
			t.Fatalf("render call %d: %+v", i+1, v)
		}
	}
	if l, err := c.ListVideos(ctx, client.ListVideosParams{}); err != nil || l.Total != 1 {
		t.Fatalf("render made another video: %+v (%v)", l, err)
	}

	_, proKey := h.account("pro", 100)
	pc := sdkClient(t, h.base, proKey)
	paid, err := pc.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "a lighthouse at dawn", DurationSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.RenderVideo(ctx, paid.ID); !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != client.CodeInvalidRequest {
		t.Fatalf("render of a video that was not a preview: %v", err)
	}
	if _, err := pc.RenderVideo(ctx, preview.ID); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("render of another account's video: %v", err)
	}
	if _, err := pc.RenderVideo(ctx, ""); err == nil {
		t.Fatal("render of an empty id: no error")
	}
}

// Folders lists the account's folders as the server sends them.
func TestSDKFolders(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	_, key := h.account("pro", 100)
	c := sdkClient(t, h.base, key)
	if l, err := c.Folders(ctx); err != nil || len(l.Data) != 0 || l.Total != 0 || l.HasMore {
		t.Fatalf("no folders yet: %+v (%v)", l, err)
	}
	before := time.Now().Unix()
	var made []string
	for _, name := range []string{"launch", "tutorials"} {
		f := expectAPIStatus(t, h.do("POST", "/v1/folders", key, map[string]any{"name": name}), http.StatusCreated)
		made = append(made, f["id"].(string))
	}
	l, err := c.Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Object != "list" || l.Count != 2 || l.Total != 2 || l.HasMore || len(l.Data) != 2 {
		t.Fatalf("two folders: %+v", l)
	}
	var names, ids []string
	for _, f := range l.Data {
		names, ids = append(names, f.Name), append(ids, f.ID)
		if f.Object != "folder" || !strings.HasPrefix(f.ID, "fld_") || f.CreatedAt < before || f.CreatedAt > time.Now().Unix() {
			t.Fatalf("folder %+v (created_at in Unix seconds)", f)
		}
	}
	slices.Sort(names)
	slices.Sort(ids)
	slices.Sort(made)
	if !slices.Equal(names, []string{"launch", "tutorials"}) || !slices.Equal(ids, made) {
		t.Fatalf("folders %+v, made %v", l.Data, made)
	}
	v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "a launch", FolderID: made[0], DurationSeconds: 5})
	if err != nil || v.FolderID == nil || *v.FolderID != made[0] {
		t.Fatalf("a video filed in %s: %+v (%v)", made[0], v, err)
	}
	bad, err := client.New(h.base, "vf_not_a_key", client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	var e *client.Error
	if _, err := bad.Folders(ctx); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Fatalf("folders with a wrong key: %v", err)
	}
}

// Folders gets every folder of an account with more than the server's
// largest page, in creation order, each once.
func TestSDKFoldersPastOnePage(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx := context.Background()
	acct, key := h.account("pro", 0)
	var made []string
	for i := range 101 {
		id := fmt.Sprintf("fld_%03d", i)
		if _, err := h.srv.Node.Apply(ctx, &fsm.CreateFolder{FolderID: id, AccountID: acct, Name: id, Now: time.Now().UnixNano()}); err != nil {
			t.Fatal(err)
		}
		made = append(made, id)
	}
	if l := expectAPIStatus(t, h.do("GET", "/v1/folders", key, nil), http.StatusOK); l["has_more"] != true {
		t.Fatalf("the server's first page holds them all: %v", l["count"])
	}
	l, err := sdkClient(t, h.base, key).Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range l.Data {
		got = append(got, f.ID)
	}
	if !slices.Equal(got, made) || l.Count != 101 || l.Total != 101 || l.HasMore {
		t.Fatalf("count %d total %d has_more %v, ids %v", l.Count, l.Total, l.HasMore, got)
	}
}

// AllVoices walks the catalogue page after page: every voice exactly once,
// in id order, filters kept on every page; a refused page ends the walk
// with its error.
func TestSDKAllVoices(t *testing.T) {
	t.Parallel()
	h := start(t, withAgent(30*time.Second))
	ctx := context.Background()
	_, key := h.account("pro", 100)
	c := sdkClient(t, h.base, key)
	more := []wire.Voice{
		{ID: "de-de", Name: "German", Language: "de-de", Gender: "male"},
		{ID: "en-gb-x-rp", Name: "English (Received Pronunciation)", Language: "en-gb-x-rp", Gender: "male"},
		{ID: "en-us+m2", Name: "English (America), Male 2", Language: "en-us", Gender: "male"},
		{ID: "es-es", Name: "Spanish (Spain)", Language: "es-es", Gender: "male"},
	}
	h.registerVoiceNode("tts-a", testVoices...)
	h.registerVoiceNode("tts-b", append(more, testVoices[0])...)
	var want []string
	for _, v := range append(slices.Clone(testVoices), more...) {
		want = append(want, v.ID)
	}
	slices.Sort(want)

	walk := func(p client.ListVoicesParams) ([]string, error) {
		var got []string
		for v, err := range c.AllVoices(ctx, p) {
			if err != nil {
				return got, err
			}
			got = append(got, v.ID)
		}
		return got, nil
	}
	for _, limit := range []int{1, 2, 3, 500} {
		got, err := walk(client.ListVoicesParams{Limit: limit})
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v (%v), want %v", limit, got, err, want)
		}
	}
	if got, err := walk(client.ListVoicesParams{Language: "en", Limit: 2}); err != nil ||
		!slices.Equal(got, []string{"en-gb", "en-gb-x-rp", "en-us", "en-us+f3", "en-us+m2"}) {
		t.Fatalf("English voices, two a page: %v (%v)", got, err)
	}
	if got, err := walk(client.ListVoicesParams{Limit: 2, StartingAfter: "en-us+f3"}); err != nil ||
		!slices.Equal(got, []string{"en-us+m2", "es-es", "fr-fr"}) {
		t.Fatalf("after en-us+f3: %v (%v)", got, err)
	}
	page, err := c.Voices(ctx, client.ListVoicesParams{Limit: 3, StartingAfter: "en-gb"})
	if err != nil || page.Count != 3 || page.Total != len(want) || !page.HasMore || page.Data[0].ID != "en-gb-x-rp" {
		t.Fatalf("one page after en-gb: %+v (%v)", page, err)
	}
	got, err := walk(client.ListVoicesParams{Limit: 501})
	var e *client.Error
	if len(got) != 0 || !errors.As(err, &e) || e.Code != client.CodeInvalidRequest || e.Details["field"] != "limit" {
		t.Fatalf("limit 501: %v (%v)", got, err)
	}
}
