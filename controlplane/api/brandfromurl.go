package api

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/brandkit"
	"github.com/vidfarm/vidfarm/netguard"
)

// Limits of fetching a brand page: a home page's HTML is rarely over a few
// hundred kilobytes, and the client waits for the answer.
const (
	brandPageMaxBytes = 2 << 20
	brandPageTimeout  = 10 * time.Second
)

// brandKitFromURL answers POST /v1/brand-kits/from-url: it fetches the page
// through the address guard and drafts a kit from what the page says of
// itself. The draft is not saved; POST it to /v1/brand-kits to keep it.
func (a *API) brandKitFromURL(w http.ResponseWriter, r *http.Request) {
	o, e := a.readObject(r, "url")
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	raw, present, e := o.str("url")
	switch {
	case e != nil:
	case !present || raw == "":
		e = apierr.Invalid("url", `field "url" is required: the https address of the brand's site`)
	default:
		e = a.checkClientURL(r.Context(), "url", raw)
	}
	if e == nil {
		e = a.lim.check(r.Context(), a.lim.media, "uploads, avatars, speech and brand-from-url", principalOf(r).AccountID)
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	page, err := a.cfg.Guard.Fetch(r.Context(), raw, brandPageMaxBytes, brandPageTimeout)
	if err != nil {
		apierr.Write(w, r, fetchError(err))
		return
	}
	ct := page.ContentType
	if mt, _, _ := mime.ParseMediaType(ct); mt != "text/html" && mt != "application/xhtml+xml" {
		apierr.Write(w, r, apierr.Invalid("url", fmt.Sprintf("the address answered %q, not an HTML page; give the address of the site's home page", ct)).
			With("content_type", ct))
		return
	}
	d := brandkit.Extract(page.Body, page.URL)
	out := brandKitJSON{Object: "brand_kit_draft", Name: d.Name, Colors: orEmpty(d.Colors), Fonts: orEmpty(d.Fonts),
		BrandIdentity: optional(d.BrandIdentity), LogoURL: optional(d.LogoURL), SourceURL: &raw}
	apierr.WriteJSON(w, http.StatusOK, out)
}

// fetchError is the answer to a page that could not be fetched: refusals of
// the address rules (at connect time or on a redirect) are the client's
// invalid_url; a page too large is the client's too; anything else (no
// answer, an error status) is the site's, worth a retry.
func fetchError(err error) *apierr.Error {
	var re *netguard.RefusedError
	switch {
	case errors.As(err, &re):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidURL, fmt.Sprintf("url is not usable: %s", re.Reason)).
			With("field", "url").With("reason", re.Reason)
	case errors.Is(err, netguard.ErrRefused):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidURL, "url is not usable: "+err.Error()).With("field", "url")
	case errors.Is(err, netguard.ErrTooLarge):
		return apierr.Invalid("url", fmt.Sprintf("the page is larger than %d bytes", brandPageMaxBytes)).With("max_bytes", brandPageMaxBytes)
	}
	e := apierr.New(http.StatusBadGateway, apierr.CodeUpstreamError, "the page could not be fetched: "+err.Error()).
		With("timeout_seconds", int(brandPageTimeout/time.Second))
	e.Retryable = true
	return e
}
