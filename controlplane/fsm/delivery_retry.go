package fsm

import "fmt"

// RetryDelivery makes one more attempt of a finished delivery to one of the
// account's endpoints, now (POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry):
// the delivery is pending again, due at once, its attempts kept. The retry
// schedule does not start over: an attempt past it that fails ends the
// delivery abandoned again. A pending delivery answers unchanged; a finished
// one of a disabled endpoint is ErrWebhookDisabled.
type RetryDelivery struct {
	AccountID  string `msgpack:"account"`
	WebhookID  string `msgpack:"webhook"`
	DeliveryID string `msgpack:"delivery"`
	Now        int64  `msgpack:"now"`
}

func (RetryDelivery) Type() MessageType { return RetryDeliveryType }

func (s *state) applyRetryDelivery(c *RetryDelivery) (Delivery, error) {
	w, ok := s.webhooks[c.WebhookID]
	if !ok || w.AccountID != c.AccountID {
		return Delivery{}, fmt.Errorf("retry on %s: %w", c.WebhookID, ErrWebhookNotFound)
	}
	d, ok := s.deliveries.get(c.DeliveryID)
	if !ok || d.WebhookID != c.WebhookID {
		return Delivery{}, fmt.Errorf("retry %s: %w", c.DeliveryID, ErrDeliveryNotFound)
	}
	if d.State == DeliveryPending {
		return d.clone(), nil
	}
	if w.Disabled() { // only DisableWebhook (61) disables: every member applies this rule
		return Delivery{}, fmt.Errorf("retry %s: %w", c.DeliveryID, ErrWebhookDisabled)
	}
	// d may be the file's copy: the changed one goes back into memory.
	r := d.clone()
	r.State, r.NextAt, r.FinishedAt = DeliveryPending, c.Now, 0
	s.deliveries.set(r.ID(), &r, true)
	s.pending.add(&r)
	s.outboxWritten = true
	return r.clone(), nil
}
