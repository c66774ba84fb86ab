package console

import (
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// EndpointsLimit is how many troubled endpoints the webhooks page lists,
// and EndpointAttempts how many of each one's latest deliveries it shows
// with their last attempt.
const (
	EndpointsLimit   = 100
	EndpointAttempts = 5
)

// EndpointJSON is a customer's webhook endpoint that is failing or
// disabled. Its secret is never shown.
type EndpointJSON struct {
	ID        string   `json:"id"`
	AccountID string   `json:"account_id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	// Status is enabled or disabled (by its owner, or by the leader after
	// failing for too long).
	Status     string     `json:"status"`
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
	// FailingSince and LastFailedAt are the first and the latest attempt
	// of its current run of failures (absent: its last attempt succeeded).
	FailingSince *time.Time `json:"failing_since,omitempty"`
	LastFailedAt *time.Time `json:"last_failed_at,omitempty"`
	// Recent are its latest deliveries, newest first, each with its last
	// attempt.
	Recent []EndpointAttemptJSON `json:"recent"`
}

// EndpointAttemptJSON is one delivery to an endpoint and its last attempt
// (none while the first is still to come).
type EndpointAttemptJSON struct {
	EventID   string             `json:"event_id"`
	EventType string             `json:"event_type,omitempty"`
	State     string             `json:"state"`
	Attempts  int                `json:"attempts"`
	Last      *admin.AttemptJSON `json:"last_attempt,omitempty"`
}

func optTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

// endpoints lists the failing and disabled endpoints with their latest
// deliveries, and how many such endpoints there are.
func endpoints(f *fsm.FSM) ([]EndpointJSON, int) {
	ws, total := f.TroubledWebhooks(EndpointsLimit)
	out := make([]EndpointJSON, 0, len(ws))
	for _, w := range ws {
		e := EndpointJSON{ID: w.ID, AccountID: w.AccountID, URL: w.URL, Events: w.Events, Status: "enabled",
			DisabledAt: optTime(w.DisabledAt), FailingSince: optTime(w.FailingSince), LastFailedAt: optTime(w.LastFailedAt),
			Recent: []EndpointAttemptJSON{}}
		if w.Disabled() {
			e.Status = fsm.WebhookDisabled
		}
		if page, err := f.WebhookDeliveries(w.AccountID, w.ID, "", EndpointAttempts); err == nil {
			for _, d := range page.Deliveries {
				r := EndpointAttemptJSON{EventID: d.EventID, EventType: d.EventType, State: d.State, Attempts: len(d.Attempts)}
				if n := len(d.Attempts); n > 0 {
					a := d.Attempts[n-1]
					r.Last = &admin.AttemptJSON{At: time.Unix(0, a.At).UTC(), Status: a.Status, Error: a.Error, LatencyMS: a.LatencyMS}
				}
				e.Recent = append(e.Recent, r)
			}
		}
		out = append(out, e)
	}
	return out, total
}
