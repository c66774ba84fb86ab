package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// The Go SDK's avatar, speech, brand kit, upload and asset calls against a
// real node: each call's success and one refusal, raw answers decoded
// strictly into the SDK's types (a field the server sends that the type
// lacks fails), and an asset's whole life.

// mediaClient is an SDK client of h with key.
func mediaClient(t *testing.T, h *harness, key string) *client.Client {
	t.Helper()
	c, err := client.New(h.base, key, client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// strictInto decodes a raw answer into v, failing on any field v lacks.
func strictInto(t *testing.T, r response, v any) {
	t.Helper()
	if r.Status >= 300 {
		t.Fatalf("want a success answer, got %d: %s", r.Status, r.Body)
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("the server's answer does not fit %T: %v\n%s", v, err, r.Body)
	}
}

// sdkError checks that err is an *Error of this status and code and returns it.
func sdkError(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Fatalf("want %d %s, got %v", status, code, err)
	}
	if !strings.HasPrefix(e.RequestID, "req_") {
		t.Fatalf("error without a request id: %+v", e)
	}
	return e
}

// sdkReadyAsset makes a ready asset of img through the SDK.
func sdkReadyAsset(t *testing.T, c *client.Client, img []byte) *client.Asset {
	t.Helper()
	ctx := t.Context()
	as, err := c.CreateAsset(ctx, client.CreateAssetRequest{Filename: "logo.png", ContentType: "image/png", SizeBytes: int64(len(img))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutAssetBytes(ctx, as, bytes.NewReader(img), int64(len(img))); err != nil {
		t.Fatal(err)
	}
	done, err := c.CompleteAsset(ctx, as.ID)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func TestSDKAvatars(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 0)
	_, otherKey := h.account("pro", 0)
	c, other := mediaClient(t, h, key), mediaClient(t, h, otherKey)
	ctx := t.Context()

	drawn, err := c.CreateAvatar(ctx, client.CreateAvatarRequest{Kind: client.AvatarKindPrompt, Prompt: "a cheerful woman in a red jacket", Name: "Rosa", Gender: "female"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(drawn.ID, "av_") || drawn.Object != "avatar" || drawn.Kind != client.AvatarKindPrompt || drawn.Status != client.AvatarPending ||
		!drawn.Owned || drawn.Gender != "female" || drawn.Name != "Rosa" || drawn.PollIntervalSeconds < 1 || drawn.CreatedAt == nil || drawn.Final() {
		t.Fatalf("prompt avatar %+v", drawn)
	}
	photo, err := c.CreateAvatar(ctx, client.CreateAvatarRequest{Kind: client.AvatarKindPhoto, FileURL: "https://images.example.com/me.jpg", Consent: true})
	if err != nil {
		t.Fatal(err)
	}
	if photo.Kind != client.AvatarKindPhoto || photo.Name != "Photo avatar" || photo.Gender != "" {
		t.Fatalf("photo avatar %+v", photo)
	}
	asset := sdkReadyAsset(t, c, pngBytes(t, 32, 32, color.RGBA{200, 150, 120, 255}))
	fromAsset, err := c.CreateAvatar(ctx, client.CreateAvatarRequest{Kind: client.AvatarKindPhoto, AssetID: asset.ID, Consent: true, Name: "Me"})
	if err != nil {
		t.Fatal(err)
	}
	// A photo without consent is the server's refusal, naming the field.
	e := sdkError(t, func() error {
		_, err := c.CreateAvatar(ctx, client.CreateAvatarRequest{Kind: client.AvatarKindPhoto, FileURL: "https://images.example.com/me.jpg"})
		return err
	}(), http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["field"] != "consent" || e.Details["hint"] == nil {
		t.Fatalf("no consent: %+v", e)
	}

	all, err := c.ListAvatars(ctx, client.ListAvatarsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if all.Object != "list" || all.Total != 9 || all.Count != 9 || all.HasMore || all.Data[0].ID != fromAsset.ID || all.Data[3].Kind != client.AvatarKindStock {
		t.Fatalf("characters: %+v", all)
	}
	page, err := c.ListAvatars(ctx, client.ListAvatarsParams{View: client.AvatarViewCatalogue, Gender: "female", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 3 || page.Count != 1 || !page.HasMore || page.Data[0].ID != "av_stock_amara" || page.Data[0].Owned || page.Data[0].CreatedAt != nil {
		t.Fatalf("female stock presenters, one: %+v", page)
	}
	if l, err := c.ListAvatars(ctx, client.ListAvatarsParams{Search: "ROSA"}); err != nil || l.Total != 1 || l.Data[0].ID != drawn.ID {
		t.Fatalf("search: %+v %v", l, err)
	}
	e = sdkError(t, func() error { _, err := c.ListAvatars(ctx, client.ListAvatarsParams{View: "everything"}); return err }(),
		http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["field"] != "view" {
		t.Fatalf("bad view: %+v", e)
	}

	// Another account's avatar is not found; a stock presenter is anyone's.
	sdkError(t, func() error { _, err := other.GetAvatar(ctx, drawn.ID); return err }(), http.StatusNotFound, client.CodeNotFound)
	if s, err := other.GetAvatar(ctx, "av_stock_ben"); err != nil || s.Kind != client.AvatarKindStock || s.Status != client.AvatarReady || s.Gender != "male" {
		t.Fatalf("stock avatar %+v %v", s, err)
	}

	// A render node makes one; the SDK reads it ready, with its picture.
	cred := h.registerNode("cpu-1")
	a := h.leaseTask(cred, 5)
	if a.Kind != scheduler.KindAvatar {
		t.Fatalf("leased %+v", a)
	}
	h.runTask(cred, a, wire.ArtifactAvatar)
	ready, err := c.GetAvatar(ctx, a.Video.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ready.Status != client.AvatarReady || !ready.Final() || ready.ImageURL == "" || ready.PollIntervalSeconds != 0 {
		t.Fatalf("made avatar %+v", ready)
	}
	checkFile(t, ready.ImageURL, "image/png", "bytes of videos/"+a.Video.ID+"/avatar/avatar.png")

	// Every field the server sends has a place in the SDK's types.
	var av client.Avatar
	strictInto(t, h.do("GET", "/v1/avatars/"+ready.ID, key, nil), &av)
	strictInto(t, h.do("GET", "/v1/avatars/av_stock_amara", key, nil), &av)
	var list client.List[client.Avatar]
	strictInto(t, h.do("GET", "/v1/avatars", key, nil), &list)
}

func TestSDKSpeech(t *testing.T) {
	h := start(t, withAgent(30*time.Second), withSpeechWait(time.Millisecond))
	_, key := h.account("pro", 0)
	_, otherKey := h.account("pro", 0)
	c, other := mediaClient(t, h, key), mediaClient(t, h, otherKey)
	ctx := t.Context()
	h.registerVoiceNode("tts", testVoices...)
	cred := h.registerNode("cpu-1", testVoices...)

	// The wait (1 ms here) ends first: the sample comes back queued, to poll.
	sp, err := c.CreateSpeech(ctx, client.CreateSpeechRequest{Text: "Hello from the farm.", VoiceID: "en-us+f3"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sp.ID, "sp_") || sp.Object != "speech" || sp.Status != client.StatusQueued || sp.AudioURL != "" ||
		sp.VoiceID != "en-us+f3" || sp.Text != "Hello from the farm." || sp.PollIntervalSeconds < 1 || sp.CreatedAt == 0 || sp.Final() {
		t.Fatalf("queued sample %+v", sp)
	}
	var raw client.Speech
	strictInto(t, h.do("GET", "/v1/voices/speech/"+sp.ID, key, nil), &raw)
	sdkError(t, func() error { _, err := other.GetSpeech(ctx, sp.ID); return err }(), http.StatusNotFound, client.CodeNotFound)

	a := h.leaseTask(cred, 5)
	if a.Kind != scheduler.KindSpeech || a.Video.ID != sp.ID {
		t.Fatalf("leased %+v", a)
	}
	a.Video.DurationSeconds = 2
	h.runTask(cred, a, wire.ArtifactSpeech)
	done, err := c.GetSpeech(ctx, sp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != client.StatusCompleted || !done.Final() || done.DurationSeconds != 2 || done.AudioURL == "" || done.PollIntervalSeconds != 0 {
		t.Fatalf("spoken sample %+v", done)
	}
	checkFile(t, done.AudioURL, "audio/mp4", "bytes of videos/"+sp.ID+"/speech/speech.m4a")
	strictInto(t, h.do("GET", "/v1/voices/speech/"+sp.ID, key, nil), &raw)

	// A voice outside the catalogue is refused with suggestions.
	e := sdkError(t, func() error {
		_, err := c.CreateSpeech(ctx, client.CreateSpeechRequest{Text: "Hi.", VoiceID: "EN_GB"})
		return err
	}(), http.StatusBadRequest, client.CodeInvalidRequest)
	if s, _ := e.Details["suggestions"].([]any); e.Details["field"] != "voice_id" || len(s) == 0 || s[0] != "en-gb" {
		t.Fatalf("unknown voice: %+v", e)
	}
}

// With the default wait, a sample spoken while the request waits comes back
// completed from CreateSpeech itself.
func TestSDKSpeechAnswered(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 0)
	c := mediaClient(t, h, key)
	h.registerVoiceNode("tts", testVoices...)
	cred := h.registerNode("cpu-1", testVoices...)
	type answer struct {
		sp  *client.Speech
		err error
	}
	got := make(chan answer, 1)
	go func() {
		sp, err := c.CreateSpeech(t.Context(), client.CreateSpeechRequest{Text: "Quick.", VoiceID: "en-gb"})
		got <- answer{sp, err}
	}()
	a := h.leaseTask(cred, 30)
	if a.Kind != scheduler.KindSpeech {
		t.Fatalf("leased %+v", a)
	}
	a.Video.DurationSeconds = 1
	h.runTask(cred, a, wire.ArtifactSpeech)
	r := <-got
	if r.err != nil || r.sp.Status != client.StatusCompleted || r.sp.AudioURL == "" || r.sp.DurationSeconds != 1 || r.sp.ID != a.Video.ID {
		t.Fatalf("answered sample %+v %v", r.sp, r.err)
	}
}

func TestSDKBrandKits(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(brandPage))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	h := start(t, withPrivateURLs())
	_, key := h.account("pro", 100)
	_, otherKey := h.account("pro", 100)
	c, other := mediaClient(t, h, key), mediaClient(t, h, otherKey)
	ctx := t.Context()

	draft, err := c.BrandKitFromURL(ctx, site.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if draft.Object != "brand_kit_draft" || draft.ID != "" || draft.CreatedAt != nil || draft.Name != "Acme Rockets" || draft.SourceURL != site.URL+"/" ||
		!slices.Equal(draft.Colors, []string{"#e63946", "#457b9d", "#1d3557"}) || !slices.Equal(draft.Fonts, []string{"Fira Sans"}) ||
		draft.LogoURL != site.URL+"/touch-icon.png" || draft.BrandIdentity != "Rockets for road runners." {
		t.Fatalf("draft %+v", draft)
	}
	var raw client.BrandKit
	strictInto(t, h.do("POST", "/v1/brand-kits/from-url", key, `{"url":"`+site.URL+`/"}`), &raw)
	e := sdkError(t, func() error { _, err := c.BrandKitFromURL(ctx, site.URL+"/json"); return err }(), http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["field"] != "url" || e.Details["content_type"] != "application/json" {
		t.Fatalf("not a page: %+v", e)
	}
	if l, err := c.ListBrandKits(ctx, client.ListBrandKitsParams{}); err != nil || l.Total != 0 {
		t.Fatalf("a draft is not saved: %+v %v", l, err)
	}

	// The draft, changed, is saved.
	req := draft.Request()
	req.MotionStyle = client.MotionDynamic
	req.Colors = []string{"#E63946", "#fff"}
	req.LogoURL = "https://1.1.1.1/logo.png" // the test site's is plain http, which a kit refuses
	saved, err := c.CreateBrandKit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(saved.ID, "br_") || saved.Object != "brand_kit" || saved.CreatedAt == nil || saved.SourceURL != "" ||
		!slices.Equal(saved.Colors, []string{"#e63946", "#ffffff"}) || saved.MotionStyle != client.MotionDynamic || saved.LogoURL != req.LogoURL || saved.Name != draft.Name {
		t.Fatalf("saved kit %+v", saved)
	}
	second, err := c.CreateBrandKit(ctx, client.CreateBrandKitRequest{Name: "Plain"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Colors == nil || len(second.Colors) != 0 || second.LogoURL != "" || second.MotionStyle != "" {
		t.Fatalf("plain kit %+v", second)
	}
	e = sdkError(t, func() error {
		_, err := c.CreateBrandKit(ctx, client.CreateBrandKitRequest{Name: "k", Colors: []string{"#fff", "red"}})
		return err
	}(), http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["field"] != "colors" || e.Details["index"] != float64(1) {
		t.Fatalf("bad colour: %+v", e)
	}

	// Newest first, one page at a time, and the iterator over the pages.
	p1, err := c.ListBrandKits(ctx, client.ListBrandKitsParams{Limit: 1})
	if err != nil || p1.Total != 2 || !p1.HasMore || p1.Data[0].ID != second.ID {
		t.Fatalf("first page %+v %v", p1, err)
	}
	p2, err := c.ListBrandKits(ctx, client.ListBrandKitsParams{Limit: 1, StartingAfter: p1.Data[0].ID})
	if err != nil || p2.HasMore || p2.Data[0].ID != saved.ID {
		t.Fatalf("second page %+v %v", p2, err)
	}
	var ids []string
	for k, err := range c.BrandKits(ctx, client.ListBrandKitsParams{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, k.ID)
	}
	if !slices.Equal(ids, []string{second.ID, saved.ID}) {
		t.Fatalf("iterated %v", ids)
	}
	var list client.List[client.BrandKit]
	strictInto(t, h.do("GET", "/v1/brand-kits", key, nil), &list)

	sdkError(t, func() error { _, err := other.DeleteBrandKit(ctx, saved.ID); return err }(), http.StatusNotFound, client.CodeNotFound)
	del, err := c.DeleteBrandKit(ctx, saved.ID)
	if err != nil || *del != (client.Deleted{ID: saved.ID, Object: "brand_kit", Deleted: true}) {
		t.Fatalf("delete %+v %v", del, err)
	}
	var rawDel client.Deleted
	strictInto(t, h.do("DELETE", "/v1/brand-kits/"+second.ID, key, nil), &rawDel)
}

func TestSDKUploads(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	c := mediaClient(t, h, key)
	ctx := t.Context()
	img := pngBytes(t, 64, 32, color.RGBA{200, 30, 30, 255})

	up, err := c.CreateUpload(ctx, client.CreateUploadRequest{Filename: "boat.png", ContentType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(up.ID, "up_") || up.Object != "upload" || up.UploadMethod != http.MethodPut || up.UploadHeaders["Content-Type"] != "image/png" ||
		!strings.HasPrefix(up.UploadURL, h.base+"/files/uploads/") || !strings.HasPrefix(up.PublicURL, h.base+"/files/uploads/") ||
		up.MaxSizeBytes != 20<<20 || up.UploadExpiresAt == 0 || up.PublicURLExpiresAt <= up.UploadExpiresAt {
		t.Fatalf("upload %+v", up)
	}
	// Bytes that are not the declared type are refused, and nothing is stored.
	e := sdkError(t, func() error {
		gif := "GIF89a, not a PNG"
		_, err := c.PutUploadBytes(ctx, up, strings.NewReader(gif), int64(len(gif)))
		return err
	}(), http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["declared"] != "image/png" || e.Details["detected"] != "image/gif" {
		t.Fatalf("wrong bytes: %+v", e)
	}
	expectAPIError(t, h.get(up.PublicURL), http.StatusNotFound, "not_found")
	// A stream of unknown length goes chunked.
	rc, err := c.PutUploadBytes(ctx, up, io.MultiReader(bytes.NewReader(img)), -1)
	if err != nil {
		t.Fatal(err)
	}
	if *rc != (client.UploadReceipt{Object: "upload_receipt", SizeBytes: int64(len(img)), ContentType: "image/png"}) {
		t.Fatalf("receipt %+v", rc)
	}
	if got := h.get(up.PublicURL); got.Status != http.StatusOK || !bytes.Equal(got.Body, img) {
		t.Fatalf("public_url answered %d with %d bytes", got.Status, len(got.Body))
	}
	e = sdkError(t, func() error {
		_, err := c.CreateUpload(ctx, client.CreateUploadRequest{Filename: "doc.pdf", ContentType: "application/pdf"})
		return err
	}(), http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["field"] != "content_type" || e.Details["allowed"] == nil {
		t.Fatalf("not an image: %+v", e)
	}

	var raw client.Upload
	strictInto(t, h.do("POST", "/v1/uploads", key, `{"filename":"b.png","content_type":"image/png"}`), &raw)
	var receipt client.UploadReceipt
	strictInto(t, h.put(raw.UploadURL, "image/png", img, false), &receipt)
}

// TestSDKAssetFlow: an asset's life through the SDK: create, upload, complete,
// read, use as a kit's logo, refused deletion while in use, then deleted.
func TestSDKAssetFlow(t *testing.T) {
	h := start(t)
	_, key := h.account("pro", 100)
	_, otherKey := h.account("pro", 100)
	c, other := mediaClient(t, h, key), mediaClient(t, h, otherKey)
	ctx := t.Context()
	img := pngBytes(t, 40, 40, color.RGBA{10, 200, 90, 255})

	as, err := c.CreateAsset(ctx, client.CreateAssetRequest{Filename: "logo.png", ContentType: "image/png", SizeBytes: int64(len(img))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(as.ID, "as_") || as.AssetID != as.ID || as.Object != "asset" || as.Status != client.AssetPending || as.URL != "" ||
		as.CompletedAt != nil || as.SizeBytes != int64(len(img)) || as.UploadMethod != http.MethodPut || as.UploadHeaders["Content-Type"] != "image/png" || as.UploadExpiresAt == 0 {
		t.Fatalf("created asset %+v", as)
	}
	// Completing before the bytes are there is refused, naming the asset.
	e := sdkError(t, func() error { _, err := c.CompleteAsset(ctx, as.ID); return err }(), http.StatusBadRequest, client.CodeInvalidRequest)
	if e.Details["asset_id"] != as.ID {
		t.Fatalf("complete with no bytes: %+v", e)
	}
	rc, err := c.PutAssetBytes(ctx, as, bytes.NewReader(img), int64(len(img)))
	if err != nil || rc.SizeBytes != int64(len(img)) {
		t.Fatalf("put %+v %v", rc, err)
	}
	sdkError(t, func() error { _, err := other.CompleteAsset(ctx, as.ID); return err }(), http.StatusNotFound, client.CodeNotFound)
	ready, err := c.CompleteAsset(ctx, as.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ready.Status != client.AssetReady || ready.CompletedAt == nil || ready.URL == "" {
		t.Fatalf("completed asset %+v", ready)
	}
	if got := h.get(ready.URL); got.Status != http.StatusOK || !bytes.Equal(got.Body, img) {
		t.Fatalf("asset url answered %d with %d bytes", got.Status, len(got.Body))
	}
	// Completing again answers it unchanged; its bytes can no longer change.
	if again, err := c.CompleteAsset(ctx, as.ID); err != nil || again.Status != client.AssetReady || *again.CompletedAt != *ready.CompletedAt {
		t.Fatalf("completed again %+v %v", again, err)
	}
	sdkError(t, func() error { _, err := c.PutAssetBytes(ctx, as, bytes.NewReader(img), int64(len(img))); return err }(),
		http.StatusBadRequest, client.CodeInvalidRequest)

	got, err := c.GetAsset(ctx, as.ID)
	if err != nil || got.ID != as.ID || got.Status != client.AssetReady || got.Filename != "logo.png" || got.ContentType != "image/png" {
		t.Fatalf("get %+v %v", got, err)
	}
	sdkError(t, func() error { _, err := other.GetAsset(ctx, as.ID); return err }(), http.StatusNotFound, client.CodeNotFound)
	second := sdkReadyAsset(t, c, img)
	l, err := c.ListAssets(ctx, client.ListAssetsParams{Limit: 1})
	if err != nil || l.Total != 2 || !l.HasMore || l.Data[0].ID != second.ID {
		t.Fatalf("first page %+v %v", l, err)
	}
	var ids []string
	for a, err := range c.Assets(ctx, client.ListAssetsParams{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	if !slices.Equal(ids, []string{second.ID, as.ID}) {
		t.Fatalf("iterated %v", ids)
	}
	sdkError(t, func() error {
		_, err := c.ListAssets(ctx, client.ListAssetsParams{StartingAfter: "as_nope"})
		return err
	}(),
		http.StatusBadRequest, client.CodeInvalidRequest)

	// A kit with the asset as its logo keeps it.
	kit, err := c.CreateBrandKit(ctx, client.CreateBrandKitRequest{Name: "Acme", Colors: []string{"#e63946"}, LogoAssetID: as.ID})
	if err != nil || kit.LogoAssetID != as.ID || kit.LogoURL != "" {
		t.Fatalf("kit with the logo asset %+v %v", kit, err)
	}
	e = sdkError(t, func() error { _, err := c.DeleteAsset(ctx, as.ID); return err }(), http.StatusBadRequest, client.CodeInvalidRequest)
	if used, _ := e.Details["used_by"].([]any); !slices.Contains(used, any(kit.ID)) {
		t.Fatalf("used_by %+v", e)
	}
	if _, err := c.DeleteBrandKit(ctx, kit.ID); err != nil {
		t.Fatal(err)
	}
	sdkError(t, func() error { _, err := other.DeleteAsset(ctx, as.ID); return err }(), http.StatusNotFound, client.CodeNotFound)
	del, err := c.DeleteAsset(ctx, as.ID)
	if err != nil || *del != (client.Deleted{ID: as.ID, Object: "asset", Deleted: true}) {
		t.Fatalf("delete %+v %v", del, err)
	}
	expectAPIError(t, h.get(ready.URL), http.StatusNotFound, "not_found")
	sdkError(t, func() error { _, err := c.GetAsset(ctx, as.ID); return err }(), http.StatusNotFound, client.CodeNotFound)
	// The first attempt's 404 is the caller's error.
	sdkError(t, func() error { _, err := c.DeleteAsset(ctx, as.ID); return err }(), http.StatusNotFound, client.CodeNotFound)

	// Every field the server sends has a place in the SDK's types.
	var created client.CreatedAsset
	strictInto(t, h.do("POST", "/v1/assets", key, fmt.Sprintf(`{"filename":"x.png","content_type":"image/png","size_bytes":%d}`, len(img))), &created)
	var pending, one client.Asset
	strictInto(t, h.do("GET", "/v1/assets/"+created.ID, key, nil), &pending)
	strictInto(t, h.do("GET", "/v1/assets/"+second.ID, key, nil), &one)
	var list client.List[client.Asset]
	strictInto(t, h.do("GET", "/v1/assets", key, nil), &list)
	var rawDel client.Deleted
	strictInto(t, h.do("DELETE", "/v1/assets/"+created.ID, key, nil), &rawDel)
}
