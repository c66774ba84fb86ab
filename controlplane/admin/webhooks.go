package admin

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// AttemptJSON is one delivery attempt: when, the receiver's HTTP status (0 when
// it never answered), why it failed, and how long it took.
type AttemptJSON struct {
	At        time.Time `json:"at"`
	Status    int       `json:"status"`
	Error     string    `json:"error,omitempty"`
	LatencyMS int64     `json:"latency_ms"`
}

// DeliveryJSON is one event's delivery to one endpoint, with every attempt.
type DeliveryJSON struct {
	ID            string        `json:"id"`
	EventID       string        `json:"event_id"`
	WebhookID     string        `json:"webhook_id"`
	AccountID     string        `json:"account_id"`
	URL           string        `json:"url"`
	State         string        `json:"state"`
	NextAttemptAt *time.Time    `json:"next_attempt_at"`
	CreatedAt     time.Time     `json:"created_at"`
	FinishedAt    *time.Time    `json:"finished_at"`
	Attempts      []AttemptJSON `json:"attempts"`
}

// DeliveriesJSON answers GET /admin/v1/webhook-deliveries.
type DeliveriesJSON struct {
	Data []DeliveryJSON `json:"data"`
}

// DeliveryQuery selects deliveries; empty fields match all, Limit 0 means 50.
type DeliveryQuery struct {
	Account, Webhook, Event, State string
	Limit                          int
}

const maxDeliveries = 500

var deliveryStates = []string{fsm.DeliveryPending, fsm.DeliveryDelivered, fsm.DeliveryAbandoned, fsm.DeliveryCancelled}

func optTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

func deliveryView(d fsm.Delivery) DeliveryJSON {
	out := DeliveryJSON{ID: d.ID(), EventID: d.EventID, WebhookID: d.WebhookID, AccountID: d.AccountID, URL: d.URL,
		State: d.State, NextAttemptAt: optTime(d.NextAt), CreatedAt: time.Unix(0, d.CreatedAt).UTC(),
		FinishedAt: optTime(d.FinishedAt), Attempts: make([]AttemptJSON, 0, len(d.Attempts))}
	for _, a := range d.Attempts {
		out.Attempts = append(out.Attempts, AttemptJSON{At: time.Unix(0, a.At).UTC(), Status: a.Status, Error: a.Error, LatencyMS: a.LatencyMS})
	}
	return out
}

// webhookDeliveries lists deliveries with their attempts, newest first, so an
// operator can see why an endpoint keeps failing.
func (s *server) webhookDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := fsm.DeliveryFilter{AccountID: q.Get("account"), WebhookID: q.Get("webhook"), EventID: q.Get("event"), State: q.Get("state"), Limit: 50}
	if f.State != "" && !slices.Contains(deliveryStates, f.State) {
		apierr.Write(w, r, apierr.Invalid("state", "state must be one of pending, delivered, abandoned, cancelled").With("allowed", deliveryStates))
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxDeliveries {
			apierr.Write(w, r, apierr.Invalid("limit", "limit must be a whole number from 1 to 500"))
			return
		}
		f.Limit = n
	}
	apierr.WriteJSON(w, http.StatusOK, DeliveriesView(s.cfg.FSM, f))
}

// DeliveriesView is GET /admin/v1/webhook-deliveries' answer from f.
func DeliveriesView(f *fsm.FSM, q fsm.DeliveryFilter) DeliveriesJSON {
	ds := f.Deliveries(q)
	out := DeliveriesJSON{Data: make([]DeliveryJSON, 0, len(ds))}
	for _, d := range ds {
		out.Data = append(out.Data, deliveryView(d))
	}
	return out
}

// WebhookDeliveries lists webhook deliveries and their attempts.
func (c *Client) WebhookDeliveries(ctx context.Context, q DeliveryQuery) (DeliveriesJSON, error) {
	v := url.Values{}
	for k, val := range map[string]string{"account": q.Account, "webhook": q.Webhook, "event": q.Event, "state": q.State} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out DeliveriesJSON
	err := c.into(ctx, http.MethodGet, "/admin/v1/webhook-deliveries?"+v.Encode(), nil, &out)
	return out, err
}
