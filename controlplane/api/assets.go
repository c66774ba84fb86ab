package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/imageguard"
)

// assetJSON is an asset as the API shows it. id and asset_id are the same
// value: the contract names both, and one id per asset leaves nothing to mix up.
type assetJSON struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	AssetID     string `json:"asset_id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	Status      string `json:"status"`
	CreatedAt   int64  `json:"created_at"`
	CompletedAt *int64 `json:"completed_at"`
	// URL is a signed address of the bytes once the asset is ready.
	URL *string `json:"url"`
}

type createdAssetJSON struct {
	assetJSON
	UploadURL       string            `json:"upload_url"`
	UploadMethod    string            `json:"upload_method"`
	UploadHeaders   map[string]string `json:"upload_headers"`
	UploadExpiresAt int64             `json:"upload_expires_at"`
}

func (a *API) assetView(as fsm.Asset, exp time.Time) assetJSON {
	out := assetJSON{ID: as.ID, Object: "asset", AssetID: as.ID, Filename: as.Filename, ContentType: as.ContentType,
		SizeBytes: as.Size, Status: as.Status, CreatedAt: as.CreatedAt / 1e9}
	if as.Status == fsm.AssetReady {
		done, u := as.CompletedAt/1e9, a.fileURL(as.BlobKey, exp)
		out.CompletedAt, out.URL = &done, &u
	}
	return out
}

// createAsset answers POST /v1/assets: a pending asset and where to PUT its bytes.
func (a *API) createAsset(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	o, e := a.readObject(r, "filename", "content_type", "size_bytes")
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	filename, ct, e := parseFileFields(o)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	size, e := o.integer("size_bytes")
	switch {
	case e != nil:
	case size == nil:
		e = apierr.Invalid("size_bytes", `field "size_bytes" is required: the exact size of the file in bytes`).With("maximum", MaxUploadBytes)
	case *size < 1:
		e = apierr.Invalid("size_bytes", "size_bytes must be at least 1").With("minimum", 1)
	case *size > MaxUploadBytes:
		// A field's value, not the body's size: payload_too_large (413) is
		// for a body over the JSON limit, or bytes PUT beyond the size.
		e = apierr.Invalid("size_bytes", fmt.Sprintf("the file must be at most %d bytes", MaxUploadBytes)).With("maximum", MaxUploadBytes)
	}
	if e == nil {
		e = a.lim.check(r.Context(), a.lim.media, "uploads, avatars, speech and brand-from-url", p.AccountID)
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	now := a.cfg.Now()
	id := ids.New("as")
	key := "assets/" + id + uploadTypes[ct] // no account id: the key is in URLs
	created, err := fsm.Do(r.Context(), a.store, &fsm.CreateAsset{Asset: fsm.Asset{ID: id, AccountID: p.AccountID, Filename: filename,
		ContentType: ct, Size: *size, BlobKey: key, CreatedAt: now.UnixNano()}})
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	exp := now.Add(uploadURLTTL)
	w.Header().Set("Location", "/v1/assets/"+id)
	apierr.WriteJSON(w, http.StatusCreated, createdAssetJSON{
		assetJSON: a.assetView(created, exp), UploadURL: a.cfg.Signer.PutURL("/files/"+key, exp),
		UploadMethod: http.MethodPut, UploadHeaders: map[string]string{"Content-Type": ct}, UploadExpiresAt: exp.Unix(),
	})
}

func (a *API) getAsset(w http.ResponseWriter, r *http.Request) {
	as, ok := a.fsm.Asset(principalOf(r).AccountID, chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("asset"))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, a.assetView(as, a.readExpiry()))
}

// completeAsset answers POST /v1/assets/{id}/complete: it checks the stored
// bytes against the declared size and type and marks the asset ready.
func (a *API) completeAsset(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	if _, e := a.readOptionalEmpty(r); e != nil {
		apierr.Write(w, r, e)
		return
	}
	as, ok := a.fsm.Asset(p.AccountID, chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("asset"))
		return
	}
	if as.Status == fsm.AssetReady {
		apierr.WriteJSON(w, http.StatusOK, a.assetView(as, a.readExpiry()))
		return
	}
	found, err := a.inspectBlob(r, as.BlobKey)
	if errors.Is(err, blob.ErrNotFound) {
		apierr.Write(w, r, apierr.Invalid("id", "no bytes were uploaded for this asset yet: PUT them to its upload_url with its upload_headers, then complete it").
			With("asset_id", as.ID))
		return
	}
	if err != nil {
		a.log.Error("inspect asset", "request_id", apierr.RequestID(r.Context()), "asset_id", as.ID, "err", err)
		apierr.Write(w, r, apierr.Internal())
		return
	}
	size, ct := found.size, found.contentType
	// Bytes of the declared size and type are checked as images before the
	// asset is marked ready; other bytes are refused by the command below,
	// with the declared and found values. Either way a refused asset stays
	// pending (deleted with its bytes 24 hours after its creation, or at
	// once with DELETE) and nothing is written.
	if size == as.Size && ct == as.ContentType {
		if e := checkImagePixels(as, found); e != nil {
			apierr.Write(w, r, e)
			return
		}
	}
	ready, err := fsm.Do(r.Context(), a.store, &fsm.CompleteAsset{AssetID: as.ID, AccountID: p.AccountID, StoredSize: size, ContentType: ct, Now: a.cfg.Now().UnixNano()})
	if err != nil {
		e := a.fromApply(r, err)
		if errors.Is(err, fsm.ErrAssetUnusable) {
			e = e.With("declared_size_bytes", as.Size).With("stored_size_bytes", size).
				With("declared_content_type", as.ContentType).With("detected_content_type", ct)
		}
		apierr.Write(w, r, e)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, a.assetView(ready, a.readExpiry()))
}

// readOptionalEmpty reads a body that may be empty or {}.
func (a *API) readOptionalEmpty(r *http.Request) (object, *apierr.Error) {
	body, e := readBody(r)
	if e != nil || len(body) == 0 {
		return nil, e
	}
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields()
	}
	return o, e
}

// The pixel limits of an image asset, checked at its completion: the
// agents' limits (package imageguard says why).
const (
	MaxImageSide   = imageguard.MaxSide
	MaxImagePixels = imageguard.MaxPixels
)

// blobFound is what inspectBlob read of a stored blob.
type blobFound struct {
	size        int64
	contentType string // sniffed
	// width and height are the image's, from its header, when contentType
	// is one of imageConfigs and headerErr is nil.
	width, height int
	// headerErr is why the header of a blob sniffed as an image could not be
	// read (a truncated or malformed file).
	headerErr error
}

// inspectBlob returns the size of the blob at key, its sniffed media type
// and, for an image, the dimensions its header gives. Only the header is
// read, not the pixels: a JPEG's can come after its metadata, so that is
// read past too, within the blob's size.
func (a *API) inspectBlob(r *http.Request, key string) (blobFound, error) {
	rc, info, err := a.cfg.Blobs.Open(r.Context(), key)
	if err != nil {
		return blobFound{}, err
	}
	defer rc.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(rc, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return blobFound{}, fmt.Errorf("read %s: %w", key, err)
	}
	found := blobFound{size: info.Size, contentType: sniff(head[:n])}
	if !imageguard.Readable(found.contentType) {
		return found, nil
	}
	rest := &readErr{r: rc}
	w, h, err := imageguard.Size(found.contentType, io.MultiReader(bytes.NewReader(head[:n]), rest))
	switch {
	case rest.err != nil: // the store failed, not the image
		return blobFound{}, fmt.Errorf("read %s: %w", key, rest.err)
	case err != nil:
		found.headerErr = err
	default:
		found.width, found.height = w, h
	}
	return found, nil
}

// readErr remembers the error of a read other than io.EOF.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		e.err = err
	}
	return n, err
}

// checkImagePixels refuses an image asset whose header cannot be read or
// gives more pixels than MaxImageSide and MaxImagePixels allow.
func checkImagePixels(as fsm.Asset, found blobFound) *apierr.Error {
	if !imageguard.Readable(found.contentType) {
		return nil
	}
	limits := func(e *apierr.Error) *apierr.Error {
		return e.With("asset_id", as.ID).With("content_type", found.contentType).
			With("max_side_pixels", MaxImageSide).With("max_pixels", MaxImagePixels)
	}
	if found.headerErr != nil {
		reason := fmt.Sprintf("the uploaded bytes start as %s but its header cannot be read (%v)", found.contentType, found.headerErr)
		return limits(apierr.Invalid("id", fmt.Sprintf("asset %s cannot be used: %s; upload a valid file as a new asset (POST /v1/assets)", as.ID, reason)).
			With("reason", reason))
	}
	w, h := found.width, found.height
	err := imageguard.Check(w, h)
	if err == nil {
		return nil
	}
	reason := "the image is " + err.Error()
	return limits(apierr.Invalid("id", fmt.Sprintf("asset %s cannot be used: %s; scale it down and upload it as a new asset (POST /v1/assets)", as.ID, reason)).
		With("reason", reason).With("width", w).With("height", h))
}

func (a *API) listAssets(w http.ResponseWriter, r *http.Request) {
	pg, e := parsePage(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	exp := a.readExpiry()
	writePage(w, r, pg, a.fsm.Assets(principalOf(r).AccountID), func(as fsm.Asset) string { return as.ID },
		func(as fsm.Asset) assetJSON { return a.assetView(as, exp) })
}

// deleteAsset answers DELETE /v1/assets/{id}.
func (a *API) deleteAsset(w http.ResponseWriter, r *http.Request) {
	a.removeAsset(w, r, chi.URLParam(r, "id"))
}

// deleteNamedAsset answers DELETE /v1/assets, the contract's spelling ("GET
// /v1/assets and DELETE /v1/assets list and delete assets"), with the asset
// named by the query parameter asset_id or by a JSON body {"asset_id": …}:
// the query works with clients and proxies that drop a DELETE's body, the
// body with clients that read the contract as taking one. Naming it in both
// places is refused rather than one picked, as a duplicated body key is.
func (a *API) deleteNamedAsset(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := checkQuery(q, []string{"asset_id"}); e != nil {
		apierr.Write(w, r, e)
		return
	}
	id, named := q.Get("asset_id"), q.Has("asset_id")
	body, e := readBody(r)
	if e == nil && len(bytes.TrimSpace(body)) > 0 {
		var o object
		if o, e = decodeObject(body); e == nil {
			e = o.checkFields("asset_id")
		}
		if e == nil {
			s, inBody, se := o.str("asset_id")
			switch {
			case se != nil:
				e = se
			case inBody && named:
				e = apierr.Invalid("asset_id", "asset_id is given both in the query and in the body; give it once")
			case inBody:
				id = s
			}
		}
	}
	if e == nil && id == "" {
		e = apierr.Invalid("asset_id", `name the asset to delete: DELETE /v1/assets?asset_id=as_…, or a JSON body {"asset_id": "as_…"}, or DELETE /v1/assets/as_…`).
			With("expected", "an asset id (as_…) from POST /v1/assets or GET /v1/assets")
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	a.removeAsset(w, r, id)
}

// removeAsset deletes the record in one command, then its bytes. An asset a
// brand kit or an unfinished video uses is kept.
func (a *API) removeAsset(w http.ResponseWriter, r *http.Request, id string) {
	as, err := fsm.Do(r.Context(), a.store, &fsm.DeleteAsset{AssetID: id, AccountID: principalOf(r).AccountID})
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	if err := a.cfg.Blobs.Delete(r.Context(), as.BlobKey); err != nil {
		// The record is gone, so nothing can use or reach the bytes; they are only
		// space until an operator clears them.
		a.log.Error("delete asset blob", "request_id", apierr.RequestID(r.Context()), "asset_id", as.ID, "key", as.BlobKey, "err", err)
	}
	apierr.WriteJSON(w, http.StatusOK, deletedJSON{ID: as.ID, Object: "asset", Deleted: true})
}

type deletedJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
