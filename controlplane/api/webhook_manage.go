package api

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

// Managing an endpoint (additions to the contract): POST
// /v1/webhooks/{id}/test, /rotate_secret and /enable. Disabling is the
// leader's (server's webhook disable job), never a client's.

// DefaultSecretOverlap is how long the secret a rotation replaces keeps
// signing beside the new one.
const DefaultSecretOverlap = 24 * time.Hour

// WebhookObject is the webhook endpoint object of an event about an
// endpoint (webhook.test, webhook.disabled), without its secret.
func (a *API) WebhookObject(w fsm.Webhook) any { return webhookViewAt(w, a.cfg.Now()) }

// understandsEvents refuses a subscription to an event type that some
// member's binary does not know yet: CreateWebhook checks the types in
// apply, and an older member would refuse what a newer one accepts.
func (a *API) understandsEvents(events []string) error {
	gate, ok := a.store.(interface{ CheckUnderstood(fsm.MessageType) error })
	if !ok || !slices.Contains(events, fsm.EventWebhookDisabled) {
		return nil
	}
	return gate.CheckUnderstood(fsm.DisableWebhookType)
}

// webhookActionError answers the errors common to every endpoint action;
// true when err is nil and nothing was written.
func (a *API) webhookActionError(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, fsm.ErrWebhookNotFound):
		apierr.Write(w, r, apierr.NotFound("webhook endpoint"))
	case errors.Is(err, fsm.ErrWebhookLimitReached): // enabling one more than the limit
		apierr.Write(w, r, a.webhookLimitError(principalOf(r).AccountID))
	case errors.Is(err, fsm.ErrWebhookDisabled):
		id := chi.URLParam(r, "id")
		apierr.Write(w, r, apierr.New(http.StatusConflict, apierr.CodeWebhookDisabled,
			"this webhook endpoint is disabled: nothing is sent to it; fix the receiver, then enable it with POST /v1/webhooks/"+id+"/enable").
			With("webhook_id", id).With("enable", "/v1/webhooks/"+id+"/enable"))
	default:
		apierr.Write(w, r, a.fromApply(r, err))
	}
	return false
}

// webhookAction runs the command of an action on one of the caller's
// endpoints (POST /v1/webhooks/{id}/…, a body without fields), which counts
// against the webhook writes limit; false when it answered an error instead.
func webhookAction[R any](a *API, w http.ResponseWriter, r *http.Request, cmd func(accountID, id string, now time.Time) fsm.Typed[R]) (R, bool) {
	var zero R
	if e := readNoFields(r); e != nil {
		apierr.Write(w, r, e)
		return zero, false
	}
	if !a.webhookWrite(w, r) {
		return zero, false
	}
	res, err := fsm.Do(r.Context(), a.store, cmd(principalOf(r).AccountID, chi.URLParam(r, "id"), a.cfg.Now()))
	return res, a.webhookActionError(w, r, err)
}

// testWebhook queues a signed webhook.test event to the endpoint; the answer
// is its delivery, which GET /v1/webhooks/{id}/deliveries lists like any.
func (a *API) testWebhook(w http.ResponseWriter, r *http.Request) {
	d, ok := webhookAction(a, w, r, func(acct, id string, now time.Time) fsm.Typed[fsm.Delivery] {
		return &fsm.SendTestEvent{AccountID: acct, WebhookID: id, EventID: ids.New("evt"), Now: now.UnixNano()}
	})
	if ok {
		apierr.WriteJSON(w, http.StatusOK, deliveryView(fsm.EndpointDelivery{Delivery: d, EventType: fsm.EventWebhookTest}))
	}
}

// rotateWebhookSecret gives the endpoint a new secret, shown once in the
// answer; the old one signs beside it for the overlap.
func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	secret := ids.NewWebhookSecret()
	var at time.Time
	hook, ok := webhookAction(a, w, r, func(acct, id string, now time.Time) fsm.Typed[fsm.Webhook] {
		at = now
		return &fsm.RotateWebhookSecret{AccountID: acct, WebhookID: id, Secret: a.cfg.Secrets.Seal(secret, id),
			Until: now.Add(a.cfg.SecretOverlap).UnixNano(), Now: now.UnixNano()}
	})
	if ok {
		view := webhookViewAt(hook, at)
		view.Secret = secret // shown once, in the clear
		apierr.WriteJSON(w, http.StatusOK, view)
	}
}

// enableWebhook enables a disabled endpoint again; an enabled one answers
// unchanged.
func (a *API) enableWebhook(w http.ResponseWriter, r *http.Request) {
	hook, ok := webhookAction(a, w, r, func(acct, id string, now time.Time) fsm.Typed[fsm.Webhook] {
		return &fsm.EnableWebhook{AccountID: acct, WebhookID: id, Now: now.UnixNano()}
	})
	if ok {
		apierr.WriteJSON(w, http.StatusOK, webhookViewAt(hook, a.cfg.Now()))
	}
}
