package fsm

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event types, as the contract names them.
const (
	EventVideoCompleted = "video.completed"
	EventVideoFailed    = "video.failed"
	// EventVideoCanceled is an addition to the contract (CancelVideo).
	EventVideoCanceled = "video.canceled"
)

// EventTypes are every event type, in the order the API lists them.
var EventTypes = []string{EventVideoCompleted, EventVideoFailed, EventVideoCanceled, EventWebhookDisabled}

// DefaultEventTypes are what an endpoint registered without events gets: the
// contract's, so that additions reach only endpoints that ask for them.
var DefaultEventTypes = []string{EventVideoCompleted, EventVideoFailed}

// MaxWebhooksPerAccount is the contract's cap on active endpoints per account.
const MaxWebhooksPerAccount = 5

// RetrySchedule is how long after a failed attempt the next one is made: the
// contract's 1 min, 5 min, 30 min, 2 h and 6 h. The attempt after the last step
// fails abandons the delivery: six attempts in all.
var RetrySchedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}

// MaxAttemptError bounds the error text kept per attempt, so a chatty failure
// cannot bloat the state.
const MaxAttemptError = 300

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its first or next attempt
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryAbandoned = "abandoned" // every attempt of the schedule failed
	DeliveryCancelled = "cancelled" // the endpoint was deleted first
)

// Webhook is a registered endpoint. Secret signs deliveries: it must live in the
// replicated state so any future leader can sign, and it is in snapshots for the
// same reason. The API shows it once, in the registration response.
type Webhook struct {
	ID        string   `msgpack:"id"`
	AccountID string   `msgpack:"account"`
	URL       string   `msgpack:"url"`
	Events    []string `msgpack:"events"`
	Secret    string   `msgpack:"secret"`
	CreatedAt int64    `msgpack:"created_at"`
	// The fields below are additions (webhook_manage.go), omitted when empty
	// so that an endpoint that never used them encodes as before.
	//
	// Status is "" while enabled, WebhookDisabled once disabled at DisabledAt.
	Status     string `msgpack:"status,omitempty"`
	DisabledAt int64  `msgpack:"disabled_at,omitempty"`
	// OldSecret is the secret before the last rotation, stored as Secret is
	// (sealed); it signs beside Secret until OldSecretUntil.
	OldSecret      string `msgpack:"old_secret,omitempty"`
	OldSecretUntil int64  `msgpack:"old_secret_until,omitempty"`
	// FailingSince and LastFailedAt are the first and the latest attempt of
	// the current run of failed attempts (0: the last attempt succeeded).
	FailingSince int64 `msgpack:"failing_since,omitempty"`
	LastFailedAt int64 `msgpack:"last_failed_at,omitempty"`
}

// Event is a video's terminal transition, written by the command that made it.
// Video is the video as it was at that moment, so every retry sends the same object.
type Event struct {
	ID        string `msgpack:"id"`
	Type      string `msgpack:"type"`
	AccountID string `msgpack:"account"`
	Video     Video  `msgpack:"video"`
	Created   int64  `msgpack:"created"`
	// Webhook is the endpoint an event of the endpoint (webhook.test,
	// webhook.disabled) is about, without its secrets; nil for a video's.
	Webhook *Webhook `msgpack:"webhook,omitempty"`
	// QueuePosition and the wait reason are a queued video's place in the
	// queue when the event was written (video.created); empty, and not
	// encoded, in every other event.
	QueuePosition uint64 `msgpack:"queue_position,omitempty"`
	WaitReason    string `msgpack:"wait_reason,omitempty"`
	WaitMessage   string `msgpack:"wait_message,omitempty"`
}

// Attempt is one delivery attempt. Status is 0 when no HTTP answer came.
type Attempt struct {
	At        int64  `msgpack:"at"`
	Status    int    `msgpack:"status"`
	Error     string `msgpack:"error,omitempty"`
	LatencyMS int64  `msgpack:"latency_ms"`
}

// Delivery is one event on its way to one endpoint. URL is the endpoint's address
// when the event was written, kept so operators can read it after a deletion.
type Delivery struct {
	EventID    string    `msgpack:"event"`
	WebhookID  string    `msgpack:"webhook"`
	AccountID  string    `msgpack:"account"`
	URL        string    `msgpack:"url"`
	State      string    `msgpack:"state"`
	Attempts   []Attempt `msgpack:"attempts,omitempty"`
	NextAt     int64     `msgpack:"next_at"`
	CreatedAt  int64     `msgpack:"created_at"`
	FinishedAt int64     `msgpack:"finished_at"`
}

// ID names a delivery: its event and its endpoint.
func (d Delivery) ID() string { return deliveryKey(d.EventID, d.WebhookID) }

func deliveryKey(eventID, webhookID string) string { return eventID + "." + webhookID }

// EventID is the id of a video's terminal event. A video ends once, so its id
// derives from the video's: deterministic on every replica, stable across retries.
func EventID(videoID string) string { return "evt_" + strings.TrimPrefix(videoID, "vid_") }

func (w Webhook) clone() Webhook {
	w.Events = cloneStrings(w.Events)
	return w
}

func (d Delivery) clone() Delivery {
	d.Attempts = slices.Clone(d.Attempts)
	return d
}

func (s *state) applyCreateWebhook(c *CreateWebhook) (Webhook, error) {
	if _, ok := s.accounts[c.AccountID]; !ok {
		return Webhook{}, fmt.Errorf("create webhook for %s: %w", c.AccountID, ErrAccountNotFound)
	}
	if _, dup := s.webhooks[c.WebhookID]; dup || c.WebhookID == "" || c.URL == "" || c.Secret == "" {
		return Webhook{}, fmt.Errorf("%w: webhook needs a new id, a url and a secret", ErrInvalidCommand)
	}
	if len(c.Events) == 0 {
		return Webhook{}, fmt.Errorf("%w: webhook subscribes to no event", ErrInvalidCommand)
	}
	for i, e := range c.Events {
		if !slices.Contains(EventTypes, e) || slices.Contains(c.Events[:i], e) {
			return Webhook{}, fmt.Errorf("%w: event %q unknown or repeated", ErrInvalidCommand, e)
		}
	}
	if s.countedWebhooks(c.AccountID) >= MaxWebhooksPerAccount {
		return Webhook{}, ErrWebhookLimitReached
	}
	w := &Webhook{ID: c.WebhookID, AccountID: c.AccountID, URL: c.URL, Events: cloneStrings(c.Events),
		Secret: c.Secret, CreatedAt: c.Now}
	s.webhooks[w.ID] = w
	s.accountWebhooks[w.AccountID] = append(s.accountWebhooks[w.AccountID], w.ID)
	return w.clone(), nil
}

func (s *state) applyDeleteWebhook(c *DeleteWebhook) (Webhook, error) {
	w, ok := s.webhooks[c.WebhookID]
	if !ok || w.AccountID != c.AccountID {
		return Webhook{}, fmt.Errorf("delete webhook %s: %w", c.WebhookID, ErrWebhookNotFound)
	}
	delete(s.webhooks, w.ID)
	s.accountWebhooks[w.AccountID] = slices.DeleteFunc(s.accountWebhooks[w.AccountID], func(id string) bool { return id == w.ID })
	if len(s.accountWebhooks[w.AccountID]) == 0 {
		delete(s.accountWebhooks, w.AccountID)
	}
	s.finishPending(w.ID, DeliveryCancelled, c.Now)
	return w.clone(), nil
}

// finishPending finishes every delivery still waiting for endpoint
// hookID as st, at at, and returns how many it finished.
func (s *state) finishPending(hookID, st string, at int64) int {
	n := 0
	for key := range s.pending.byHook[hookID] { // finishDelivery removes key: allowed while ranging
		s.finishDelivery(s.deliveries.mem[key], st, at) // pending: in memory
		n++
	}
	return n
}

func (s *state) finishDelivery(d *Delivery, st string, at int64) {
	d.State, d.FinishedAt, d.NextAt = st, at, 0
	s.pending.remove(d)
	s.deliveries.mark(d.ID())
}

func (s *state) applyRecordDelivery(c *RecordDelivery) (Delivery, error) {
	d, ok := s.deliveries.get(deliveryKey(c.EventID, c.WebhookID))
	if !ok {
		return Delivery{}, fmt.Errorf("delivery of %s to %s: %w", c.EventID, c.WebhookID, ErrDeliveryNotFound)
	}
	if d.State != DeliveryPending {
		return Delivery{}, fmt.Errorf("delivery %s is %s: %w", d.ID(), d.State, ErrDeliveryFinished)
	}
	a := Attempt{At: c.At, Status: c.Status, Error: c.Error, LatencyMS: c.LatencyMS}
	if w := s.webhooks[c.WebhookID]; w != nil {
		s.trackAttempt(w, c.At, c.Status >= 200 && c.Status < 300)
	}
	if len(a.Error) > MaxAttemptError {
		a.Error = a.Error[:MaxAttemptError]
	}
	d.Attempts = append(d.Attempts, a) // pending, so in memory
	s.deliveries.mark(d.ID())
	switch n := len(d.Attempts); {
	case c.Status >= 200 && c.Status < 300:
		s.finishDelivery(d, DeliveryDelivered, c.At)
	case n > len(RetrySchedule):
		s.finishDelivery(d, DeliveryAbandoned, c.At)
	default:
		d.NextAt = c.At + int64(RetrySchedule[n-1])
	}
	return d.clone(), nil
}

func (s *state) applyPruneDeliveries(c *PruneDeliveries) (int, error) {
	// Both scans read the tables' time indexes: finished deliveries by when
	// they finished, events by when they were made.
	n := s.deliveries.expire(c.Before)
	for _, id := range s.events.before(c.Before) {
		if !s.deliveries.hasPrefix(deliveryKey(id, "")) {
			s.events.del(id)
		}
	}
	return n, nil
}

// emitVideoEvent writes v's terminal event (see emit). Callers have just
// moved v to completed, failed or canceled.
func (s *state) emitVideoEvent(v *Video, now int64) {
	typ := EventVideoCompleted
	switch v.Status {
	case StatusFailed:
		typ = EventVideoFailed
	case StatusCanceled:
		typ = EventVideoCanceled
	}
	if s.events.has(EventID(v.ID)) {
		return
	}
	s.emitVideo(v, typ, now)
}

// emit records ev in its account's event log (eventlog.go) and writes one
// pending delivery per enabled endpoint of the account subscribed to its
// type; the outbox keeps the event only while it has a subscriber. Every
// event of an account goes through here but a test event, which is sent
// to one endpoint and not logged (SendTestEvent).
func (s *state) emit(ev Event) {
	s.logEvent(ev)
	if subs := s.subscribers(ev.AccountID, ev.Type); len(subs) > 0 {
		// A copy of its own: taking ev's address would move every emitted
		// event to the heap, subscribed to or not.
		e := ev
		s.queueEvent(&e, subs) // the callers checked the id is new
	}
}

// subscribers are the account's enabled endpoints subscribed to typ, in
// creation order. A disabled endpoint is sent nothing new: what it missed
// is in the event log, not queued without bound.
func (s *state) subscribers(accountID, typ string) []*Webhook {
	var subs []*Webhook
	for _, wid := range s.accountWebhooks[accountID] {
		if w := s.webhooks[wid]; slices.Contains(w.Events, typ) && !w.Disabled() {
			subs = append(subs, w)
		}
	}
	return subs
}

// queueEvent writes e, which must be new, and one pending delivery of it to
// each of to, due at once. Every event an endpoint receives is written here.
func (s *state) queueEvent(e *Event, to []*Webhook) {
	s.events.set(e.ID, e, false)
	for _, w := range to {
		d := &Delivery{EventID: e.ID, WebhookID: w.ID, AccountID: w.AccountID, URL: w.URL, State: DeliveryPending,
			NextAt: e.Created, CreatedAt: e.Created}
		s.deliveries.set(d.ID(), d, false) // its event is new, so is it
		s.pending.add(d)
	}
	s.outboxWritten = true
}
