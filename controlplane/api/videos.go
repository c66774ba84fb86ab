package api

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

const maxIdempotencyKey = 255

func (a *API) createVideo(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	body, e := readBody(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	idemKey := r.Header.Get("Idempotency-Key")
	if e := checkIdempotencyKey(idemKey); e != nil {
		apierr.Write(w, r, e)
		return
	}
	spec, price, e := a.parseCreate(r.Context(), p.AccountID, body)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	acct, ok := a.fsm.Account(p.AccountID)
	if !ok {
		apierr.Write(w, r, apierr.New(http.StatusUnauthorized, apierr.CodeInvalidAPIKey, "the account of this key no longer exists"))
		return
	}
	// Only an Idempotency-Key's record compares it (encoding the spec to
	// hash it was 9% of the create handler's CPU).
	var bodyHash [32]byte
	if idemKey != "" {
		bodyHash = requestHash(spec)
	}
	now := a.cfg.Now().UnixNano()
	// A retry that will replay its first answer creates nothing, so it does not
	// spend the creation quota: clients can always recover their original response.
	// Nor does a request refused below because the account cannot pay for
	// it or its key is in use (402, 409): it gives its token back, so a
	// client told 402 that buys credits and retries is not then rate
	// limited. A refusal of the free plan (403) keeps it: an upgrade moves
	// the account to the premium limits anyway, and the free plan's 2 a
	// minute still bound what a free account hammering the farm costs it. A
	// request whose outcome is unknown (a 5xx: Raft may have applied it)
	// keeps it too, erring on the strict side.
	var spent *limitClass // the class a token was taken from, if any
	if idemKey == "" || !a.fsm.IdempotencyReplays(p.AccountID, idemKey, bodyHash, now) {
		class, scope := a.lim.freeAcc, "free video creation"
		if fsm.Premium(acct.Plan) {
			class, scope = a.lim.premium, "video creation"
		}
		if e := a.lim.check(r.Context(), class, scope, p.AccountID); e != nil {
			apierr.Write(w, r, e)
			return
		}
		spent = class
	}
	if idemKey != "" {
		k := inflightKey{account: p.AccountID, key: idemKey}
		if !a.inflight.acquire(k) {
			a.lim.giveBack(r.Context(), spent, p.AccountID)
			e := apierr.New(http.StatusConflict, apierr.CodeIdempotencyInFlight,
				"a request with this Idempotency-Key is still being processed; retry shortly")
			e.Retryable = true
			e.RetryAfter = 1
			apierr.Write(w, r, e)
			return
		}
		defer a.inflight.release(k)
	}
	res, err := fsm.Do(r.Context(), a.store, &fsm.CreateVideo{
		VideoID: ids.New("vid"), AccountID: p.AccountID, Spec: spec, Price: price,
		IdempotencyKey: idemKey, BodyHash: bodyHash, Now: now,
	})
	if err != nil {
		e := a.fromApply(r, err)
		if refusalGivesBack(e) {
			a.lim.giveBack(r.Context(), spent, p.AccountID)
		}
		apierr.Write(w, r, e)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	} else if res.Video.Status == fsm.StatusQueued {
		a.workQueued()
	}
	w.Header().Set("Location", "/v1/videos/"+res.Video.ID)
	apierr.WriteJSON(w, http.StatusCreated, a.videoView(res.QueuedVideo, createExpiry(res.Video)))
}

func checkIdempotencyKey(k string) *apierr.Error {
	if len(k) > maxIdempotencyKey {
		return apierr.Invalid("Idempotency-Key", fmt.Sprintf("the Idempotency-Key header is longer than %d characters", maxIdempotencyKey))
	}
	if strings.IndexFunc(k, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) }) >= 0 {
		return apierr.Invalid("Idempotency-Key", "the Idempotency-Key header must be printable ASCII")
	}
	return nil
}

func (a *API) getVideo(w http.ResponseWriter, r *http.Request) {
	v, ok := a.fsm.Video(principalOf(r).AccountID, chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("video"))
		return
	}
	a.addWait(&v)
	apierr.WriteJSON(w, http.StatusOK, a.videoView(v, a.readExpiry()))
}

// addWait estimates a queued video's wait for a read.
func (a *API) addWait(v *fsm.QueuedVideo) {
	if v.Status == fsm.StatusQueued {
		w := a.fsm.EstimateWait(v.ID, a.cfg.Now().UnixNano())
		v.Wait = &w
	}
}

var videoStatuses = []string{fsm.StatusQueued, fsm.StatusProcessing, fsm.StatusCompleted, fsm.StatusFailed, fsm.StatusPreview, fsm.StatusCanceled}

type listJSON[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	Count   int    `json:"count"`
	Total   int    `json:"total"`
	HasMore bool   `json:"has_more"`
}

func (a *API) listVideos(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "status", "folder_id", "limit", "starting_after":
		default:
			apierr.Write(w, r, apierr.Invalid(k, fmt.Sprintf("unknown query parameter %q; use status, folder_id, limit or starting_after", k)))
			return
		}
	}
	flt := fsm.VideoFilter{Status: q.Get("status"), FolderID: q.Get("folder_id"), Limit: 20, StartingAfter: q.Get("starting_after")}
	if q.Has("status") && !slices.Contains(videoStatuses, flt.Status) {
		apierr.Write(w, r, apierr.Invalid("status", fmt.Sprintf("status %q is not valid", flt.Status)).With("allowed", videoStatuses))
		return
	}
	limit, e := parseLimit(q)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	flt.Limit = limit
	if flt.FolderID != "" {
		if _, ok := a.fsm.Folder(p.AccountID, flt.FolderID); !ok {
			apierr.Write(w, r, apierr.Invalid("folder_id", fmt.Sprintf("no folder %q in this account", flt.FolderID)))
			return
		}
	}
	page, err := a.fsm.ListVideos(p.AccountID, flt)
	if err != nil {
		apierr.Write(w, r, apierr.Invalid("starting_after", "starting_after must be the id of one of this account's videos"))
		return
	}
	exp := a.readExpiry()
	out := listJSON[videoJSON]{Object: "list", Data: make([]videoJSON, 0, len(page.Videos)), Total: page.Total, HasMore: page.HasMore}
	for _, v := range page.Videos {
		a.addWait(&v)
		out.Data = append(out.Data, a.videoView(v, exp))
	}
	out.Count = len(out.Data)
	apierr.WriteJSON(w, http.StatusOK, out)
}

// renderPreview renders a previewed project once the account is premium. The body
// may be empty or {}; calling it again returns the video as it now stands.
func (a *API) renderPreview(w http.ResponseWriter, r *http.Request) {
	res, ok := videoAction(a, w, r, func(id, account string, now int64) fsm.Typed[fsm.CreateVideoResult] {
		return &fsm.RenderPreview{VideoID: id, AccountID: account, Now: now}
	})
	if !ok {
		return
	}
	if res.Video.Status == fsm.StatusQueued {
		a.workQueued()
	}
	apierr.WriteJSON(w, http.StatusOK, a.videoView(res.QueuedVideo, a.readExpiry()))
}

// requestHash identifies what a create asks for: the validated request with its
// defaults filled in. Key order, spacing, null for an absent field, 10 for 10.0 or
// an explicit default do not change it, so a retry re-encoded by another client
// library still replays; any difference in what would be rendered does.
func requestHash(spec fsm.Spec) [32]byte {
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("api: a validated spec does not encode: %v", err)) // plain data: cannot happen
	}
	return sha256.Sum256(b)
}

// cancelVideo stops a queued or processing video (an addition to the
// contract). The body may be empty or {}. A canceled video answers again as
// it stands, so a retry is harmless; a finished one is 409.
func (a *API) cancelVideo(w http.ResponseWriter, r *http.Request) {
	res, ok := videoAction(a, w, r, func(id, account string, now int64) fsm.Typed[fsm.CancelVideoResult] {
		return &fsm.CancelVideo{VideoID: id, AccountID: account, Now: now}
	})
	if !ok {
		return
	}
	apierr.WriteJSON(w, http.StatusOK, a.videoView(fsm.QueuedVideo{Video: res.Video}, a.readExpiry()))
}

// readNoFields reads a body that may be empty or an object without fields
// ({}), as the action endpoints take.
func readNoFields(r *http.Request) *apierr.Error {
	body, e := readBody(r)
	if e != nil || len(strings.TrimSpace(string(body))) == 0 {
		return e
	}
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields()
	}
	return e
}

// videoAction runs the command of an action on a video (POST
// /v1/videos/{id}/…, a body without fields) for the caller's account; false
// when it answered an error instead.
func videoAction[R any](a *API, w http.ResponseWriter, r *http.Request, cmd func(videoID, accountID string, now int64) fsm.Typed[R]) (R, bool) {
	var zero R
	if e := readNoFields(r); e != nil {
		apierr.Write(w, r, e)
		return zero, false
	}
	res, err := fsm.Do(r.Context(), a.store, cmd(chi.URLParam(r, "id"), principalOf(r).AccountID, a.cfg.Now().UnixNano()))
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return zero, false
	}
	return res, true
}
