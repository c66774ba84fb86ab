package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
	"github.com/vidfarm/vidfarm/netguard"
)

// maxWebhookURL bounds a webhook address; longer ones are refused before any lookup.
const maxWebhookURL = 2048

// urlCheckTimeout bounds the DNS lookup behind a registration's address check.
const urlCheckTimeout = 5 * time.Second

// webhookJSON is the contract's webhook endpoint. Secret is set only in the
// registration and rotation responses. Status and the fields after it are
// additions (webhook_manage.go).
type webhookJSON struct {
	ID        string   `json:"id"`
	Object    string   `json:"object"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret,omitempty"`
	CreatedAt int64    `json:"created_at"`
	// Status is "enabled" or "disabled"; DisabledAt is set while disabled.
	Status     string `json:"status"`
	DisabledAt *int64 `json:"disabled_at,omitempty"`
	// PreviousSecretExpiresAt is when the secret before the last rotation
	// stops signing; absent when only one secret signs.
	PreviousSecretExpiresAt *int64 `json:"previous_secret_expires_at,omitempty"`
}

// webhookViewAt is w as a client sees it at now: a previous secret whose
// overlap ended is not shown even if no command has forgotten it yet.
func webhookViewAt(w fsm.Webhook, now time.Time) webhookJSON {
	out := webhookJSON{ID: w.ID, Object: "webhook_endpoint", URL: w.URL, Events: w.Events,
		CreatedAt: time.Unix(0, w.CreatedAt).Unix(), Status: "enabled"}
	if w.Disabled() {
		out.Status = fsm.WebhookDisabled
		at := unixOf(w.DisabledAt)
		out.DisabledAt = &at
	}
	if w.OldSecret != "" && now.UnixNano() < w.OldSecretUntil {
		until := unixOf(w.OldSecretUntil)
		out.PreviousSecretExpiresAt = &until
	}
	return out
}

// EventVideo is the video object of a webhook event: the video as GET
// /v1/videos/{id} renders it, file URLs signed until urlExpiry.
func (a *API) EventVideo(v fsm.Video, urlExpiry time.Time) any {
	return a.videoView(fsm.QueuedVideo{Video: v}, urlExpiry)
}

// listWebhooks answers every endpoint in one page: an account has at most 5
// enabled ones, plus those disabled after days of failed deliveries that it
// has not deleted, too few for pages to help.
func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) {
	if e := checkWholeListQuery(r.URL.Query(), "GET /v1/webhooks"); e != nil {
		apierr.Write(w, r, e)
		return
	}
	now := a.cfg.Now()
	apierr.WriteJSON(w, http.StatusOK, wholeList(a.fsm.Webhooks(principalOf(r).AccountID),
		func(h fsm.Webhook) webhookJSON { return webhookViewAt(h, now) }))
}

// wholeList is a list answer holding every item, in one page.
func wholeList[T, V any](items []T, view func(T) V) listJSON[V] {
	out := listJSON[V]{Object: "list", Data: make([]V, 0, len(items)), Count: len(items), Total: len(items)}
	for _, it := range items {
		out.Data = append(out.Data, view(it))
	}
	return out
}

// webhookWrite spends one token of the webhook-writes limit. Every write attempt
// counts, valid or not: each may cost a DNS lookup.
func (a *API) webhookWrite(w http.ResponseWriter, r *http.Request) bool {
	if e := a.lim.check(r.Context(), a.lim.webhookWrites, "webhook registration and writes", principalOf(r).AccountID); e != nil {
		apierr.Write(w, r, e)
		return false
	}
	return true
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) {
	if !a.webhookWrite(w, r) {
		return
	}
	raw, events, e := parseWebhook(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	if err := a.understandsEvents(events); err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), urlCheckTimeout)
	u, err := a.cfg.WebhookGuard.CheckURL(ctx, raw)
	cancel()
	if errors.Is(err, netguard.ErrLookup) {
		apierr.Write(w, r, lookupFailed("url", err))
		return
	}
	if err != nil {
		apierr.Write(w, r, invalidURL(err))
		return
	}
	p := principalOf(r)
	id, secret := ids.New("whk"), ids.NewWebhookSecret()
	cmd := &fsm.CreateWebhook{WebhookID: id, AccountID: p.AccountID, URL: u.String(), Events: events,
		Secret: a.cfg.Secrets.Seal(secret, id), Now: a.cfg.Now().UnixNano()}
	hook, err := fsm.Do(r.Context(), a.store, cmd)
	if errors.Is(err, fsm.ErrWebhookLimitReached) {
		apierr.Write(w, r, a.webhookLimitError(p.AccountID))
		return
	}
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	view := webhookViewAt(hook, a.cfg.Now())
	view.Secret = secret // shown once, in the clear
	apierr.WriteJSON(w, http.StatusCreated, view)
}

// webhookLimitError answers a registration (or an enable) past the account's
// endpoint limit.
func (a *API) webhookLimitError(accountID string) *apierr.Error {
	what := "webhook endpoints"
	if a.fsm.ActiveWebhookLimitOn() {
		what = "active (enabled) webhook endpoints"
	}
	return apierr.New(http.StatusConflict, apierr.CodeWebhookLimitReached,
		fmt.Sprintf("this account already has %d %s, the most allowed; delete one with DELETE /v1/webhooks/{id} first", fsm.MaxWebhooksPerAccount, what)).
		With("max_endpoints", fsm.MaxWebhooksPerAccount).With("existing_webhook_ids", a.webhookIDs(accountID))
}

func (a *API) webhookIDs(accountID string) []string {
	var out []string
	for _, h := range a.fsm.Webhooks(accountID) {
		out = append(out, h.ID)
	}
	return out
}

// parseWebhook reads {url, events}; events default to the contract's types
// (fsm.DefaultEventTypes: an endpoint registered as before gets what it got
// before) and come back without repeats, in the order of fsm.EventTypes.
func parseWebhook(r *http.Request) (string, []string, *apierr.Error) {
	body, e := readBody(r)
	if e != nil {
		return "", nil, e
	}
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields("url", "events")
	}
	if e != nil {
		return "", nil, e
	}
	raw, present, e := o.str("url")
	if e != nil {
		return "", nil, e
	}
	if !present || strings.TrimSpace(raw) == "" {
		return "", nil, apierr.Invalid("url", "url is required: the public https address events are POSTed to")
	}
	if len(raw) > maxWebhookURL {
		return "", nil, invalidURL(&netguard.RefusedError{URL: raw[:64] + "…", Reason: fmt.Sprintf("longer than %d characters", maxWebhookURL)})
	}
	asked, present, e := o.strings("events")
	if e != nil {
		return "", nil, e
	}
	if !present {
		return raw, slices.Clone(fsm.DefaultEventTypes), nil
	}
	var events []string
	for _, t := range fsm.EventTypes {
		if slices.Contains(asked, t) {
			events = append(events, t)
		}
	}
	for _, t := range asked {
		if !slices.Contains(fsm.EventTypes, t) {
			return "", nil, apierr.Invalid("events", fmt.Sprintf("unknown event type %q; allowed are %s", t, strings.Join(fsm.EventTypes, ", "))).
				With("allowed", fsm.EventTypes)
		}
	}
	if len(events) == 0 {
		return "", nil, apierr.Invalid("events", "events must name at least one event type, or be left out for "+strings.Join(fsm.DefaultEventTypes, " and ")).
			With("allowed", fsm.EventTypes)
	}
	return raw, events, nil
}

// invalidURL is the 400 invalid_url for a refused address, with the guard's reason.
func invalidURL(err error) *apierr.Error {
	e := apierr.New(http.StatusBadRequest, apierr.CodeInvalidURL,
		"the webhook url must be a public https address; private, loopback, link-local and metadata addresses are refused").
		With("field", "url")
	var ref *netguard.RefusedError
	if errors.As(err, &ref) {
		return e.With("reason", ref.Reason)
	}
	return e.With("reason", err.Error())
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if !a.webhookWrite(w, r) {
		return
	}
	id := chi.URLParam(r, "id")
	_, err := a.store.Apply(r.Context(), &fsm.DeleteWebhook{WebhookID: id, AccountID: principalOf(r).AccountID, Now: a.cfg.Now().UnixNano()})
	if errors.Is(err, fsm.ErrWebhookNotFound) {
		apierr.Write(w, r, apierr.NotFound("webhook endpoint"))
		return
	}
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, deletedJSON{ID: id, Object: "webhook_endpoint", Deleted: true})
}
