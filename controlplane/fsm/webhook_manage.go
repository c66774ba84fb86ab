package fsm

import (
	"fmt"
)

// Managing an endpoint (additions to the contract): a signed test event,
// rotating the signing secret with an overlap in which both sign, and
// disabling an endpoint whose every attempt failed for days (a leader job)
// until its owner enables it again.

// Event types of an endpoint itself. webhook.disabled is subscribable (an
// account's other endpoints learn that one was disabled); webhook.test goes
// only to the endpoint it was asked for, whatever it subscribes to.
const (
	EventWebhookTest     = "webhook.test"
	EventWebhookDisabled = "webhook.disabled"
)

// WebhookDisabled is Webhook.Status of a disabled endpoint; an enabled one
// keeps Status empty, as every endpoint did before.
const WebhookDisabled = "disabled"

// Disabled reports whether nothing is attempted to w.
func (w Webhook) Disabled() bool { return w.Status == WebhookDisabled }

// public is w as an event carries it: no secrets, no failure bookkeeping.
func (w Webhook) public() *Webhook {
	c := w.clone()
	c.Secret, c.OldSecret, c.OldSecretUntil, c.FailingSince, c.LastFailedAt = "", "", 0, 0, 0
	return &c
}

// forgetOldSecret drops w's previous secret once its overlap ended at now:
// every command that touches an endpoint calls it with its leader's time, so
// replicas forget it at the same entry; reads compare the time themselves.
func (w *Webhook) forgetOldSecret(now int64) {
	if w.OldSecret != "" && now >= w.OldSecretUntil {
		w.OldSecret, w.OldSecretUntil = "", 0
	}
}

// trackAttempt keeps w's run of failed attempts. It counts only once every
// member records a level that understands DisableWebhook: an older binary
// applies RecordDelivery without it, so a replica that counted earlier
// entries than another would disable at another entry.
func (s *state) trackAttempt(w *Webhook, at int64, ok bool) {
	w.forgetOldSecret(at)
	if !s.levelReached(DisableWebhookType) {
		return
	}
	switch {
	case ok:
		w.FailingSince, w.LastFailedAt = 0, 0
	case w.FailingSince == 0:
		w.FailingSince, w.LastFailedAt = at, at
	default:
		w.LastFailedAt = max(w.LastFailedAt, at)
	}
}

// levelReached reports whether every member recorded in the state applies
// type t: a deterministic answer, read from the replicated records. A state
// with no member records (an FSM outside a cluster) has only this binary.
func (s *state) levelReached(t MessageType) bool {
	for _, m := range s.members {
		if m.Level() < t {
			return false
		}
	}
	return true
}

// ownWebhook is the account's endpoint id, or ErrWebhookNotFound.
func (s *state) ownWebhook(accountID, id string) (*Webhook, error) {
	w, ok := s.webhooks[id]
	if !ok || w.AccountID != accountID {
		return nil, fmt.Errorf("webhook %s: %w", id, ErrWebhookNotFound)
	}
	return w, nil
}

// SendTestEvent queues a webhook.test event to one of the account's
// endpoints (POST /v1/webhooks/{id}/test): an ordinary delivery, signed,
// retried and listed like any other. EventID is the leader's new evt_ id.
type SendTestEvent struct {
	AccountID string `msgpack:"account"`
	WebhookID string `msgpack:"webhook"`
	EventID   string `msgpack:"event"`
	Now       int64  `msgpack:"now"`
}

func (*SendTestEvent) Type() MessageType { return SendTestEventType }

func (s *state) applySendTestEvent(c *SendTestEvent) (Delivery, error) {
	w, err := s.ownWebhook(c.AccountID, c.WebhookID)
	if err != nil {
		return Delivery{}, err
	}
	if w.Disabled() {
		return Delivery{}, fmt.Errorf("test event to %s: %w", w.ID, ErrWebhookDisabled)
	}
	if c.EventID == "" || s.events.has(c.EventID) {
		return Delivery{}, fmt.Errorf("%w: a test event needs a new event id", ErrInvalidCommand)
	}
	w.forgetOldSecret(c.Now)
	s.queueEvent(&Event{ID: c.EventID, Type: EventWebhookTest, AccountID: w.AccountID, Webhook: w.public(), Created: c.Now},
		[]*Webhook{w})
	d, _ := s.deliveries.get(deliveryKey(c.EventID, w.ID))
	return d.clone(), nil
}

// RotateWebhookSecret gives an endpoint a new signing secret (stored as
// CreateWebhook's is: sealed by the leader when it has a secrets key). The
// secret it replaces signs beside it until Until, the leader's time plus the
// overlap; Until at or before Now ends it at once. A rotation during an
// overlap replaces the older secret: two sign at most.
type RotateWebhookSecret struct {
	AccountID string `msgpack:"account"`
	WebhookID string `msgpack:"webhook"`
	Secret    string `msgpack:"secret"`
	Until     int64  `msgpack:"until"`
	Now       int64  `msgpack:"now"`
}

func (*RotateWebhookSecret) Type() MessageType { return RotateWebhookSecretType }

func (s *state) applyRotateWebhookSecret(c *RotateWebhookSecret) (Webhook, error) {
	if c.Secret == "" {
		return Webhook{}, fmt.Errorf("%w: rotate webhook %s without a secret", ErrInvalidCommand, c.WebhookID)
	}
	w, err := s.ownWebhook(c.AccountID, c.WebhookID)
	if err != nil {
		return Webhook{}, err
	}
	w.OldSecret, w.OldSecretUntil, w.Secret = w.Secret, c.Until, c.Secret
	w.forgetOldSecret(c.Now)
	return w.clone(), nil
}

// DisableWebhook disables an endpoint whose run of failed attempts, first to
// latest, spans at least MinFailing (the leader job's threshold, 5 days by
// default) and still starts at FailingSince: a success recorded after the
// leader looked ends the run and makes this a no-op. Its pending deliveries
// stay pending and wait; nothing is attempted to it and no new event is
// queued for it until EnableWebhook. The account's other enabled endpoints
// subscribed to webhook.disabled get one, EventID (the leader's).
type DisableWebhook struct {
	WebhookID    string `msgpack:"webhook"`
	FailingSince int64  `msgpack:"failing_since"`
	MinFailing   int64  `msgpack:"min_failing"`
	EventID      string `msgpack:"event"`
	Now          int64  `msgpack:"now"`
}

func (*DisableWebhook) Type() MessageType { return DisableWebhookType }

// applyDisableWebhook reports whether it disabled the endpoint.
func (s *state) applyDisableWebhook(c *DisableWebhook) (bool, error) {
	if c.MinFailing <= 0 || c.EventID == "" {
		return false, fmt.Errorf("%w: disable webhook %s needs a threshold and an event id", ErrInvalidCommand, c.WebhookID)
	}
	w, ok := s.webhooks[c.WebhookID]
	if !ok || w.Disabled() || w.FailingSince == 0 || w.FailingSince != c.FailingSince ||
		w.LastFailedAt-w.FailingSince < c.MinFailing || s.events.has(c.EventID) {
		return false, nil
	}
	w.forgetOldSecret(c.Now)
	w.Status, w.DisabledAt = WebhookDisabled, c.Now
	s.emit(Event{ID: c.EventID, Type: EventWebhookDisabled, AccountID: w.AccountID, Webhook: w.public(), Created: c.Now})
	return true, nil
}

// EnableWebhook enables a disabled endpoint again (POST
// /v1/webhooks/{id}/enable): its pending deliveries are attempted again
// (those whose time passed, at once) and its run of failures starts over.
// An enabled endpoint answers unchanged.
type EnableWebhook struct {
	AccountID string `msgpack:"account"`
	WebhookID string `msgpack:"webhook"`
	Now       int64  `msgpack:"now"`
}

func (*EnableWebhook) Type() MessageType { return EnableWebhookType }

func (s *state) applyEnableWebhook(c *EnableWebhook) (Webhook, error) {
	w, err := s.ownWebhook(c.AccountID, c.WebhookID)
	if err != nil {
		return Webhook{}, err
	}
	if w.Disabled() && s.activeWebhookLimit && s.countedWebhooks(c.AccountID) >= MaxWebhooksPerAccount {
		return Webhook{}, ErrWebhookLimitReached // it would be one more active endpoint
	}
	w.forgetOldSecret(c.Now)
	if !w.Disabled() {
		return w.clone(), nil
	}
	w.Status, w.DisabledAt, w.FailingSince, w.LastFailedAt = "", 0, 0, 0
	s.outboxWritten = true // its waiting deliveries are due again: wake the deliverer
	return w.clone(), nil
}

// AbandonDisabled abandons the deliveries still waiting for an endpoint
// disabled at DisabledAt, when that is at or before Before (the leader's
// clock less server.Config.WebhookDisabledKeep, 7 days by default): they
// finish as abandoned, at Now, as after their last failed attempt, so the
// prune (PruneDeliveries) drops them a week later. Until then they answer
// in the delivery list and an owner who enables the endpoint can retry
// them one by one. Without it a disabled endpoint held its waiting
// deliveries in every member's memory for as long as it existed. An
// endpoint enabled (and maybe disabled again) since the leader looked
// carries another DisabledAt and is left alone. It answers how many it
// abandoned.
type AbandonDisabled struct {
	WebhookID  string `msgpack:"webhook"`
	DisabledAt int64  `msgpack:"disabled_at"`
	Before     int64  `msgpack:"before"`
	Now        int64  `msgpack:"now"`
}

func (*AbandonDisabled) Type() MessageType { return AbandonDisabledType }

func (s *state) applyAbandonDisabled(c *AbandonDisabled) (int, error) {
	w, ok := s.webhooks[c.WebhookID]
	if !ok || !w.Disabled() || w.DisabledAt != c.DisabledAt || c.DisabledAt > c.Before {
		return 0, nil
	}
	return s.finishPending(w.ID, DeliveryAbandoned, c.Now), nil
}
