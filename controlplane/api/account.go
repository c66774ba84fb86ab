package api

import (
	_ "embed"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/controlplane/preview"
	"github.com/vidfarm/vidfarm/models"
)

func (a *API) root(w http.ResponseWriter, r *http.Request) {
	apierr.WriteJSON(w, http.StatusOK, map[string]any{
		"object":         "api",
		"name":           "vidfarm",
		"version":        "v1",
		"status":         "ok",
		"documentation":  "/v1/openapi.json",
		"authentication": "Authorization: Bearer <API_KEY> or X-API-Key: <API_KEY>",
	})
}

//go:embed openapi.json
var openAPIDoc []byte

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
}

type accountJSON struct {
	Object             string            `json:"object"`
	ID                 string            `json:"id"`
	Name               string            `json:"name"`
	Plan               string            `json:"plan"`
	Premium            bool              `json:"premium"`
	Credits            int64             `json:"credits"`
	FreeVideoAvailable bool              `json:"free_video_available"`
	Links              map[string]string `json:"links"`
}

func (a *API) me(w http.ResponseWriter, r *http.Request) {
	acct, ok := a.fsm.Account(principalOf(r).AccountID)
	if !ok {
		apierr.Write(w, r, apierr.NotFound("account"))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, accountJSON{
		Object: "account", ID: acct.ID, Name: acct.Name, Plan: acct.Plan, Premium: fsm.Premium(acct.Plan),
		Credits: acct.Credits, FreeVideoAvailable: !fsm.Premium(acct.Plan) && !acct.FreeVideoUsed,
		Links: map[string]string{"buy_credits": a.buyCreditsURL(), "upgrade": a.upgradeURL()},
	})
}

// listModels answers the catalog whole: the contract calls it the full
// catalog of 32, too few for pages to help.
func (a *API) listModels(w http.ResponseWriter, r *http.Request) {
	if e := checkWholeListQuery(r.URL.Query(), "GET /v1/models"); e != nil {
		apierr.Write(w, r, e)
		return
	}
	all := models.All()
	apierr.WriteJSON(w, http.StatusOK, listJSON[models.Model]{Object: "list", Data: all, Count: len(all), Total: len(all)})
}

type folderJSON struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Name      string `json:"name"`
	CreatedAt int64  `json:"created_at"`
}

func folderView(f fsm.Folder) folderJSON {
	return folderJSON{ID: f.ID, Object: "folder", Name: f.Name, CreatedAt: time.Unix(0, f.CreatedAt).Unix()}
}

// listFolders pages like assets and brand kits, since an account may make
// any number of folders, but oldest first as the list always was: a client
// that read it whole keeps its order.
func (a *API) listFolders(w http.ResponseWriter, r *http.Request) {
	pg, e := parsePage(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	writePage(w, r, pg, a.fsm.Folders(principalOf(r).AccountID), func(f fsm.Folder) string { return f.ID }, folderView)
}

const maxFolderName = 100

func (a *API) createFolder(w http.ResponseWriter, r *http.Request) {
	body, e := readBody(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields("name")
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	name, present, e := o.str("name")
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	if n := utf8.RuneCountInString(name); !present || strings.TrimSpace(name) == "" || n > maxFolderName {
		apierr.Write(w, r, apierr.Invalid("name", "name is required, 1 to 100 characters").With("max_length", maxFolderName))
		return
	}
	if e := checkName("name", name); e != nil {
		apierr.Write(w, r, e)
		return
	}
	folder, err := fsm.Do(r.Context(), a.store, &fsm.CreateFolder{FolderID: ids.New("fld"), AccountID: principalOf(r).AccountID, Name: name, Now: a.cfg.Now().UnixNano()})
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	apierr.WriteJSON(w, http.StatusCreated, folderView(folder))
}

// previewFile serves a preview still. The signed URL is the credential: anyone
// holding it may fetch the image until it expires, like any other file URL.
func (a *API) previewFile(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := a.cfg.Signer.Verify(previewPath(id), r.URL.Query(), a.cfg.Now()); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusForbidden, apierr.CodeInvalidRequest, "this file URL is invalid or has expired; fetch the video again for a fresh URL").With("reason", err.Error()))
		return
	}
	v, ok := a.fsm.Video("", id)
	if !ok || (v.Status != fsm.StatusPreview && !v.RenderedFromPreview) {
		apierr.Write(w, r, apierr.NotFound("file"))
		return
	}
	shape := v.Spec.Orientation
	if shape == "" {
		shape = v.Spec.AspectRatio
	}
	img, err := preview.PNG(v.Spec.Prompt, shape)
	if err != nil {
		a.log.Error("render preview still", "video_id", id, "err", err)
		apierr.Write(w, r, apierr.Internal())
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, _ = w.Write(img)
}
