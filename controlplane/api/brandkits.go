package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/brandkit"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

// motionStyles are the values of motion_style: how lively the kit's videos
// move. The composite moves the presenter by it (pipeline.MotionCalm …).
var motionStyles = []string{"calm", "smooth", "dynamic", "energetic"}

var brandKitFields = []string{"name", "colors", "fonts", "motion_style", "brand_identity", "logo_url", "logo_asset_id"}

// brandKitJSON is a kit as the API shows it; a draft from from-url has the same
// fields with id null and object brand_kit_draft.
type brandKitJSON struct {
	ID            *string  `json:"id"`
	Object        string   `json:"object"`
	Name          string   `json:"name"`
	Colors        []string `json:"colors"`
	Fonts         []string `json:"fonts"`
	MotionStyle   *string  `json:"motion_style"`
	BrandIdentity *string  `json:"brand_identity"`
	LogoURL       *string  `json:"logo_url"`
	LogoAssetID   *string  `json:"logo_asset_id"`
	CreatedAt     *int64   `json:"created_at"`
	// SourceURL is the page a draft was drafted from.
	SourceURL *string `json:"source_url,omitempty"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func brandKitView(k fsm.BrandKit) brandKitJSON {
	created := k.CreatedAt / 1e9
	return brandKitJSON{ID: &k.ID, Object: "brand_kit", Name: k.Name, Colors: orEmpty(k.Colors), Fonts: orEmpty(k.Fonts),
		MotionStyle: optional(k.MotionStyle), BrandIdentity: optional(k.BrandIdentity), LogoURL: optional(k.LogoURL),
		LogoAssetID: optional(k.LogoAssetID), CreatedAt: &created}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (a *API) listBrandKits(w http.ResponseWriter, r *http.Request) {
	pg, e := parsePage(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	writePage(w, r, pg, a.fsm.BrandKits(principalOf(r).AccountID), func(k fsm.BrandKit) string { return k.ID }, brandKitView)
}

// createBrandKit answers POST /v1/brand-kits.
func (a *API) createBrandKit(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	o, e := a.readObject(r, brandKitFields...)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	k, e := a.parseBrandKit(r, o)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	k.ID, k.AccountID, k.CreatedAt = ids.New("br"), p.AccountID, a.cfg.Now().UnixNano()
	kit, err := fsm.Do(r.Context(), a.store, &fsm.CreateBrandKit{Kit: k})
	if err != nil {
		e := a.fromApply(r, err)
		if errors.Is(err, fsm.ErrAssetUnusable) {
			e = e.With("field", "logo_asset_id")
		}
		apierr.Write(w, r, e)
		return
	}
	w.Header().Set("Location", "/v1/brand-kits/"+k.ID)
	apierr.WriteJSON(w, http.StatusCreated, brandKitView(kit))
}

// parseBrandKit validates a kit's fields; colours come back as "#rrggbb".
func (a *API) parseBrandKit(r *http.Request, o object) (fsm.BrandKit, *apierr.Error) {
	var k fsm.BrandKit
	name, present, e := o.str("name")
	if e != nil {
		return k, e
	}
	if n := utf8.RuneCountInString(name); !present || strings.TrimSpace(name) == "" || n > brandkit.MaxName {
		return k, apierr.Invalid("name", fmt.Sprintf("name is required, 1 to %d characters", brandkit.MaxName)).With("max_length", brandkit.MaxName)
	}
	if e := checkName("name", name); e != nil {
		return k, e
	}
	k.Name = name
	k.Colors, e = eachString(o, "colors", brandkit.MaxColors, "colours; the first is the main one", func(i int, c string) (string, *apierr.Error) {
		n, err := brandkit.NormalizeColor(c)
		if err != nil {
			return "", apierr.Invalid("colors", fmt.Sprintf("colors[%d]: %v; use CSS hex colours such as \"#1d3557\"", i, err)).
				With("index", i).With("value", c).With("expected", "#RRGGBB or #RGB")
		}
		return n, nil
	})
	if e != nil {
		return k, e
	}
	k.Fonts, e = eachString(o, "fonts", brandkit.MaxFonts, "font families", func(i int, f string) (string, *apierr.Error) {
		t := strings.TrimSpace(f)
		if t == "" || utf8.RuneCountInString(t) > brandkit.MaxFontName || strings.ContainsAny(t, `;{}<>"`) || strings.IndexFunc(t, unicode.IsControl) >= 0 {
			return "", apierr.Invalid("fonts", fmt.Sprintf("fonts[%d] must be a font family name of 1 to %d characters, such as \"Inter\"", i, brandkit.MaxFontName)).
				With("index", i).With("value", f)
		}
		return t, nil
	})
	if e != nil {
		return k, e
	}
	if k.MotionStyle, present, e = o.str("motion_style"); e != nil {
		return k, e
	}
	if present && !slices.Contains(motionStyles, k.MotionStyle) {
		return k, apierr.Invalid("motion_style", fmt.Sprintf("motion_style %q is not valid", k.MotionStyle)).With("allowed", motionStyles)
	}
	if k.BrandIdentity, _, e = o.str("brand_identity"); e != nil {
		return k, e
	}
	if n := utf8.RuneCountInString(k.BrandIdentity); n > brandkit.MaxBrandIdentity {
		return k, apierr.Invalid("brand_identity", fmt.Sprintf("brand_identity has %d characters; the limit is %d", n, brandkit.MaxBrandIdentity)).
			With("max_length", brandkit.MaxBrandIdentity)
	}
	if e := checkLongText("brand_identity", k.BrandIdentity); e != nil {
		return k, e
	}
	if k.LogoURL, _, e = o.str("logo_url"); e != nil {
		return k, e
	}
	if k.LogoAssetID, _, e = o.str("logo_asset_id"); e != nil {
		return k, e
	}
	switch {
	case k.LogoURL != "" && k.LogoAssetID != "":
		return k, apierr.Invalid("logo_url", "send logo_url or logo_asset_id, not both")
	case k.LogoURL != "":
		if e := a.checkInputURL(r.Context(), "logo_url", k.LogoURL); e != nil {
			return k, e
		}
	case k.LogoAssetID != "":
		if e := checkID("logo_asset_id", k.LogoAssetID, "as_"); e != nil {
			return k, e
		}
	}
	return k, nil
}

// eachString reads an array of strings of at most max items, each checked
// and normalised by check.
func eachString(o object, field string, max int, what string, check func(i int, v string) (string, *apierr.Error)) ([]string, *apierr.Error) {
	vs, _, e := o.strings(field)
	if e != nil {
		return nil, e
	}
	if len(vs) > max {
		return nil, apierr.Invalid(field, fmt.Sprintf("at most %d %s", max, what)).With("max_items", max)
	}
	var out []string
	for i, v := range vs {
		n, e := check(i, v)
		if e != nil {
			return nil, e
		}
		out = append(out, n)
	}
	return out, nil
}

func (a *API) deleteBrandKit(w http.ResponseWriter, r *http.Request) {
	kit, err := fsm.Do(r.Context(), a.store, &fsm.DeleteBrandKit{KitID: chi.URLParam(r, "id"), AccountID: principalOf(r).AccountID})
	if errors.Is(err, fsm.ErrBrandKitNotFound) {
		apierr.Write(w, r, apierr.NotFound("brand kit"))
		return
	}
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, deletedJSON{ID: kit.ID, Object: "brand_kit", Deleted: true})
}
