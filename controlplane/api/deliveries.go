package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// An endpoint's delivery history (GET /v1/webhooks/{id}/deliveries): an
// addition to the contract, so a client can see what its receiver answered.

type deliveryAttemptJSON struct {
	AttemptedAt int64 `json:"attempted_at"`
	// ResponseStatus is null when no HTTP answer came (Error says why).
	ResponseStatus *int   `json:"response_status"`
	LatencyMS      int64  `json:"latency_ms"`
	Error          string `json:"error,omitempty"`
}

type deliveryJSON struct {
	ID          string                `json:"id"`
	Object      string                `json:"object"`
	WebhookID   string                `json:"webhook_id"`
	EventID     string                `json:"event_id"`
	EventType   string                `json:"event_type"`
	Status      string                `json:"status"`
	Attempts    []deliveryAttemptJSON `json:"attempts"`
	NextRetryAt *int64                `json:"next_retry_at"`
	CreatedAt   int64                 `json:"created_at"`
	FinishedAt  *int64                `json:"finished_at"`
}

// deliveryListJSON is the list shape without total: counting an endpoint's
// whole history would read all of it.
type deliveryListJSON struct {
	Object  string         `json:"object"`
	Data    []deliveryJSON `json:"data"`
	Count   int            `json:"count"`
	HasMore bool           `json:"has_more"`
}

func unixOf(ns int64) int64 { return time.Unix(0, ns).Unix() }

func deliveryView(d fsm.EndpointDelivery) deliveryJSON {
	out := deliveryJSON{ID: d.ID(), Object: "webhook_delivery", WebhookID: d.WebhookID, EventID: d.EventID,
		EventType: d.EventType, Status: d.State, Attempts: make([]deliveryAttemptJSON, 0, len(d.Attempts)),
		CreatedAt: unixOf(d.CreatedAt)}
	for _, a := range d.Attempts {
		aj := deliveryAttemptJSON{AttemptedAt: unixOf(a.At), LatencyMS: a.LatencyMS, Error: a.Error}
		if a.Status != 0 {
			aj.ResponseStatus = &a.Status
		}
		out.Attempts = append(out.Attempts, aj)
	}
	if d.State == fsm.DeliveryPending {
		next := unixOf(d.NextAt)
		if len(d.Attempts) == 0 {
			next = out.CreatedAt // the first attempt is due at once
		}
		out.NextRetryAt = &next
	} else {
		fin := unixOf(d.FinishedAt)
		out.FinishedAt = &fin
	}
	return out
}

func (a *API) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	pg, e := parsePage(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	res, err := a.fsm.WebhookDeliveries(principalOf(r).AccountID, chi.URLParam(r, "id"), pg.startingAfter, pg.limit)
	switch {
	case errors.Is(err, fsm.ErrWebhookNotFound):
		apierr.Write(w, r, apierr.NotFound("webhook endpoint"))
		return
	case errors.Is(err, fsm.ErrDeliveryNotFound):
		apierr.Write(w, r, apierr.Invalid("starting_after", "starting_after must be the id of a delivery of this endpoint"))
		return
	case err != nil:
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	out := deliveryListJSON{Object: "list", Data: make([]deliveryJSON, 0, len(res.Deliveries)), HasMore: res.HasMore}
	for _, d := range res.Deliveries {
		v := deliveryView(d)
		if res.Disabled {
			v.NextRetryAt = nil // waits for POST /v1/webhooks/{id}/enable, not for a time
		}
		out.Data = append(out.Data, v)
	}
	out.Count = len(out.Data)
	apierr.WriteJSON(w, http.StatusOK, out)
}

// retryWebhookDelivery makes one more attempt of a delivery now (an
// addition): the delivery is pending again and the deliverer sends it.
func (a *API) retryWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	if e := readNoFields(r); e != nil {
		apierr.Write(w, r, e)
		return
	}
	// A webhook write like test or enable: each retry is a replicated
	// write and a request out to the receiver.
	if !a.webhookWrite(w, r) {
		return
	}
	d, err := fsm.Do(r.Context(), a.store, &fsm.RetryDelivery{AccountID: principalOf(r).AccountID, WebhookID: chi.URLParam(r, "id"),
		DeliveryID: chi.URLParam(r, "delivery_id"), Now: a.cfg.Now().UnixNano()})
	switch {
	case errors.Is(err, fsm.ErrWebhookNotFound):
		apierr.Write(w, r, apierr.NotFound("webhook endpoint"))
		return
	case errors.Is(err, fsm.ErrDeliveryNotFound):
		apierr.Write(w, r, apierr.NotFound("webhook delivery"))
		return
	case !a.webhookActionError(w, r, err):
		return
	}
	ed := fsm.EndpointDelivery{Delivery: d}
	if e, ok := a.fsm.Event(d.EventID); ok {
		ed.EventType = e.Type
	}
	apierr.WriteJSON(w, http.StatusOK, deliveryView(ed))
}
