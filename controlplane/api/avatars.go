package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/avatarart"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/models"
)

// Avatars (GET/POST /v1/avatars, GET /v1/avatars/{id}). Two views: the
// characters view is what can present an auto video, the account's own
// avatars (newest first, every status, so a pending one shows up) then the
// stock presenters; the catalogue view is the stock presenters alone. An
// account avatar is made by one render-farm task: drawn from a prompt, or
// a photo the render node fetches and crops.

// Limits of the avatar endpoints.
const (
	maxAvatarName   = 100
	maxAvatarSearch = 100
)

var (
	avatarQueryParams = []string{"view", "search", "gender", "limit", "starting_after"}
	avatarViews       = []string{"characters", "catalogue"}
	avatarKinds       = []string{fsm.AvatarKindPrompt, fsm.AvatarKindPhoto}
	avatarGenders     = []string{models.GenderFemale, models.GenderMale}
	avatarFields      = []string{"kind", "name", "prompt", "file_url", "asset_id", "consent", "gender"}
)

type avatarErrorJSON struct {
	Message string `json:"message"`
}

// avatarJSON is an avatar as the API shows it. Stock avatars have kind
// "stock" and are always ready; their image_url is their picture, drawn
// here as agents draw it (avatarart).
type avatarJSON struct {
	ID        string           `json:"id"`
	Object    string           `json:"object"`
	Kind      string           `json:"kind"`
	Name      string           `json:"name"`
	Gender    *string          `json:"gender"`
	Owned     bool             `json:"owned"`
	Status    string           `json:"status"`
	Prompt    string           `json:"prompt,omitempty"`
	ImageURL  string           `json:"image_url,omitempty"`
	Error     *avatarErrorJSON `json:"error,omitempty"`
	CreatedAt *int64           `json:"created_at,omitempty"`
	// PollInterval is set while the avatar is being made.
	PollInterval int `json:"poll_interval_seconds,omitempty"`
}

func (a *API) stockView(s models.StockAvatar, exp time.Time) avatarJSON {
	g := s.Gender
	return avatarJSON{ID: s.ID, Object: "avatar", Kind: "stock", Name: s.Name, Gender: &g, Status: fsm.AvatarReady,
		ImageURL: a.cfg.Signer.URL(stockAvatarPath(s.ID), exp)}
}

func stockAvatarPath(id string) string { return "/files/stock-avatars/" + id + ".png" }

// stockAvatarFile serves a stock avatar's picture behind a signed URL, as
// preview stills are: the same for every account, drawn once per process.
func (a *API) stockAvatarFile(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := a.cfg.Signer.Verify(stockAvatarPath(id), r.URL.Query(), a.cfg.Now()); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusForbidden, apierr.CodeInvalidRequest,
			"this file URL is invalid or has expired; fetch the avatar again for a fresh URL").With("reason", err.Error()))
		return
	}
	if _, ok := models.GetStockAvatar(id); !ok {
		apierr.Write(w, r, apierr.NotFound("file"))
		return
	}
	img, err := avatarart.StockPNG(id)
	if err != nil {
		a.log.Error("draw stock avatar", "avatar_id", id, "err", err)
		apierr.Write(w, r, apierr.Internal())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(img)
}

func (a *API) avatarView(av fsm.Avatar, exp time.Time) avatarJSON {
	created := time.Unix(0, av.CreatedAt).Unix()
	out := avatarJSON{ID: av.ID, Object: "avatar", Kind: av.Kind, Name: av.Name, Owned: true, Status: av.Status,
		Prompt: av.Prompt, CreatedAt: &created}
	if av.Gender != "" {
		g := av.Gender
		out.Gender = &g
	}
	switch av.Status {
	case fsm.AvatarReady:
		out.ImageURL = a.fileURL(av.Image, exp)
	case fsm.AvatarFailed:
		out.Error = &avatarErrorJSON{Message: av.Error}
	default:
		out.PollInterval = PollIntervalSeconds
	}
	return out
}

// avatarFilter is a parsed GET /v1/avatars query.
type avatarFilter struct {
	catalogue bool
	search    string // lower case
	gender    string
	page      page
}

func (f avatarFilter) match(id, name, gender string) bool {
	if f.gender != "" && gender != f.gender {
		return false
	}
	return f.search == "" || strings.Contains(strings.ToLower(id), f.search) || strings.Contains(strings.ToLower(name), f.search)
}

func parseAvatarQuery(r *http.Request) (avatarFilter, *apierr.Error) {
	q := r.URL.Query()
	if e := checkQuery(q, avatarQueryParams); e != nil {
		return avatarFilter{}, e
	}
	f := avatarFilter{search: strings.ToLower(q.Get("search")), gender: q.Get("gender")}
	if view := q.Get("view"); q.Has("view") && !slices.Contains(avatarViews, view) {
		return f, apierr.Invalid("view", fmt.Sprintf("view %q is not valid: characters (your avatars and the stock presenters) or catalogue (stock presenters only)", view)).
			With("allowed", slices.Clone(avatarViews))
	}
	f.catalogue = q.Get("view") == "catalogue"
	if q.Has("gender") && !slices.Contains(avatarGenders, f.gender) {
		return f, apierr.Invalid("gender", fmt.Sprintf("gender %q is not valid: use female or male", f.gender)).With("allowed", slices.Clone(avatarGenders))
	}
	if utf8.RuneCountInString(f.search) > maxAvatarSearch {
		return f, apierr.Invalid("search", fmt.Sprintf("search is longer than %d characters", maxAvatarSearch)).With("max_length", maxAvatarSearch)
	}
	pg, e := pageOf(q)
	f.page = pg
	return f, e
}

// avatarItem is an avatar of the list before its page is cut, so that only
// the avatars of the page have their image URL signed.
type avatarItem struct {
	id   string
	view func() avatarJSON
}

func (a *API) listAvatars(w http.ResponseWriter, r *http.Request) {
	f, e := parseAvatarQuery(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	var all []avatarItem
	exp := a.readExpiry()
	if !f.catalogue {
		for _, av := range a.fsm.Avatars(principalOf(r).AccountID) {
			if f.match(av.ID, av.Name, av.Gender) {
				all = append(all, avatarItem{av.ID, func() avatarJSON { return a.avatarView(av, exp) }})
			}
		}
	}
	for _, s := range models.StockAvatars() {
		if f.match(s.ID, s.Name, s.Gender) {
			all = append(all, avatarItem{s.ID, func() avatarJSON { return a.stockView(s, exp) }})
		}
	}
	// The cursor must be an avatar of this filtered view: an avatar's name,
	// gender and kind never change, so the last one of a page stays in it.
	writePage(w, r, f.page, all, func(it avatarItem) string { return it.id }, func(it avatarItem) avatarJSON { return it.view() })
}

func (a *API) getAvatar(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if s, ok := models.GetStockAvatar(id); ok {
		apierr.WriteJSON(w, http.StatusOK, a.stockView(s, a.readExpiry()))
		return
	}
	av, ok := a.fsm.Avatar(principalOf(r).AccountID, id)
	if !ok {
		apierr.Write(w, r, apierr.NotFound("avatar"))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, a.avatarView(av, a.readExpiry()))
}

// parseAvatar validates a POST /v1/avatars body.
func (a *API) parseAvatar(ctx context.Context, body []byte) (fsm.CreateAvatar, *apierr.Error) {
	var c fsm.CreateAvatar
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields(avatarFields...)
	}
	if e != nil {
		return c, e
	}
	kind, present, e := o.str("kind")
	switch {
	case e != nil:
		return c, e
	case !present:
		return c, apierr.Invalid("kind", `field "kind" is required: "prompt" (drawn from a description) or "photo" (from a picture at file_url)`).
			With("allowed", slices.Clone(avatarKinds))
	case !slices.Contains(avatarKinds, kind):
		return c, apierr.Invalid("kind", fmt.Sprintf("kind %q is not valid: use \"prompt\" or \"photo\"", kind)).With("allowed", slices.Clone(avatarKinds))
	}
	av := fsm.Avatar{Kind: kind}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"name", &av.Name}, {"gender", &av.Gender}, {"prompt", &av.Prompt}, {"file_url", &av.FileURL}, {"asset_id", &av.AssetID}} {
		if *f.dst, _, e = o.str(f.name); e != nil {
			return c, e
		}
	}
	consent, e := o.boolean("consent")
	if e != nil {
		return c, e
	}
	if n := utf8.RuneCountInString(av.Name); n > maxAvatarName {
		return c, apierr.Invalid("name", fmt.Sprintf("name has %d characters; the limit is %d", n, maxAvatarName)).With("max_length", maxAvatarName)
	}
	if e := checkName("name", av.Name); e != nil {
		return c, e
	}
	if _, ok := o["gender"]; ok && !slices.Contains(avatarGenders, av.Gender) {
		return c, apierr.Invalid("gender", fmt.Sprintf("gender %q is not valid: use female or male, or leave it out", av.Gender)).
			With("allowed", slices.Clone(avatarGenders))
	}
	if kind == fsm.AvatarKindPrompt {
		e = parseAvatarPrompt(o, &av)
	} else {
		e = a.parseAvatarPhoto(ctx, o, &av, consent)
	}
	if e != nil {
		return c, e
	}
	c.Avatar, c.Consent = av, consent != nil && *consent
	return c, nil
}

func parseAvatarPrompt(o object, av *fsm.Avatar) *apierr.Error {
	for _, f := range []string{"file_url", "asset_id"} {
		if _, ok := o[f]; ok {
			return apierr.Invalid(f, f+` is for kind "photo"; a prompt avatar is drawn from prompt`).With("kind", av.Kind)
		}
	}
	n := utf8.RuneCountInString(av.Prompt)
	switch {
	case strings.TrimSpace(av.Prompt) == "":
		return apierr.Invalid("prompt", fmt.Sprintf(`field "prompt" is required for kind "prompt": describe the presenter in 1 to %d characters`, models.MaxAvatarPrompt)).
			With("min_length", 1).With("max_length", models.MaxAvatarPrompt)
	case n > models.MaxAvatarPrompt:
		return apierr.Invalid("prompt", fmt.Sprintf("prompt has %d characters; the limit is %d", n, models.MaxAvatarPrompt)).With("max_length", models.MaxAvatarPrompt)
	}
	if e := checkLongText("prompt", av.Prompt); e != nil {
		return e
	}
	if av.Name == "" {
		av.Name = shorten(strings.Join(strings.Fields(av.Prompt), " "), 60)
	}
	return nil
}

func (a *API) parseAvatarPhoto(ctx context.Context, o object, av *fsm.Avatar, consent *bool) *apierr.Error {
	if _, ok := o["prompt"]; ok {
		return apierr.Invalid("prompt", `prompt is for kind "prompt"; a photo avatar is made from the picture at file_url`).With("kind", av.Kind)
	}
	_, hasURL := o["file_url"]
	_, hasAsset := o["asset_id"]
	switch {
	case hasURL && hasAsset:
		return apierr.Invalid("asset_id", `send either file_url or asset_id for a photo avatar, not both`)
	case hasAsset:
		if !strings.HasPrefix(av.AssetID, "as_") {
			return apierr.Invalid("asset_id", fmt.Sprintf("asset_id %q is not an asset id (as_…): POST /v1/assets gives one", av.AssetID))
		}
	case !hasURL:
		return apierr.Invalid("file_url", `a photo avatar needs the photo: "file_url" (a public https address; POST /v1/uploads gives one) or "asset_id" (a ready image asset)`)
	default:
		if e := a.checkInputURL(ctx, "file_url", av.FileURL); e != nil {
			return e
		}
	}
	if consent == nil || !*consent {
		return apierr.Invalid("consent", `a photo avatar needs "consent": true, confirming that you have the permission of the person in the photo to use their likeness`).
			With("hint", `send "consent": true once the person pictured has agreed`)
	}
	if av.Name == "" {
		av.Name = "Photo avatar"
	}
	return nil
}

// shorten cuts s to at most n characters, at a space where there is one.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

func (a *API) createAvatar(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	body, e := readBody(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	c, e := a.parseAvatar(r.Context(), body)
	if e == nil {
		e = a.lim.check(r.Context(), a.lim.media, "avatar create, brand-from-url, speech and uploads", p.AccountID)
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	if id := c.Avatar.AssetID; id != "" {
		if _, ok := a.cfg.FSM.Asset(p.AccountID, id); !ok {
			apierr.Write(w, r, apierr.Invalid("asset_id", "no asset "+id+" in this account; list them with GET /v1/assets"))
			return
		}
	}
	c.Avatar.ID, c.Avatar.AccountID, c.Now = ids.New("av"), p.AccountID, a.cfg.Now().UnixNano()
	av, err := fsm.Do(r.Context(), a.store, &c)
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	a.workQueued()
	w.Header().Set("Location", "/v1/avatars/"+av.ID)
	apierr.WriteJSON(w, http.StatusCreated, a.avatarView(av, a.readExpiry()))
}

// checkAvatar refuses an auto video's avatar_id that is neither a stock
// presenter nor one of the account's ready avatars.
func (a *API) checkAvatar(accountID, id string) *apierr.Error {
	if id == "" {
		return nil
	}
	if _, ok := models.GetStockAvatar(id); ok {
		return nil
	}
	av, ok := a.fsm.Avatar(accountID, id)
	if !ok {
		return apierr.Invalid("avatar_id", fmt.Sprintf("avatar_id %q is not a stock presenter nor one of this account's avatars; list them with GET /v1/avatars", id)).
			With("hint", "GET /v1/avatars?view=characters lists the avatars this account can use")
	}
	if av.Status != fsm.AvatarReady {
		e := apierr.Invalid("avatar_id", fmt.Sprintf("avatar %s is %s, not ready; poll GET /v1/avatars/%s until its status is ready", id, av.Status, id)).
			With("status", av.Status)
		if av.Status == fsm.AvatarFailed {
			e = e.With("reason", av.Error)
		}
		return e
	}
	return nil
}
