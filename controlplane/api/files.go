package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
)

// serveFile serves a blob (a finished video, its captions or poster) behind a
// signed URL from fileURL. The signature is the credential, as for preview
// stills; range requests work, so players can seek.
func (a *API) serveFile(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Signer.Verify(r.URL.Path, r.URL.Query(), a.cfg.Now()); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusForbidden, apierr.CodeInvalidRequest,
			"this file URL is invalid or has expired; fetch the video again for a fresh URL").With("reason", err.Error()))
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/files/")
	if a.cfg.Blobs == nil || blob.ValidateKey(key) != nil {
		apierr.Write(w, r, apierr.NotFound("file"))
		return
	}
	rc, info, err := a.cfg.Blobs.Open(r.Context(), key)
	if errors.Is(err, blob.ErrNotFound) {
		apierr.Write(w, r, apierr.NotFound("file"))
		return
	}
	if err != nil {
		a.log.Error("open file", "request_id", apierr.RequestID(r.Context()), "key", key, "err", err)
		apierr.Write(w, r, apierr.Internal())
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", blob.ContentType(key))
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", info.ModTime, rc)
}
