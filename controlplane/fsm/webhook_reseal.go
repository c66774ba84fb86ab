package fsm

import (
	"fmt"
	"maps"
	"slices"
)

// Sealing webhook secrets again. Secrets enter the state as the leader
// stored them: plain, or sealed by its current secrets key (package
// sealed). When an operator sets a key, or puts a new one ahead of the old
// (--secrets-key NEW,OLD), the leader reads every secret, seals again
// those the current key did not seal, and proposes ResealWebhook for each;
// the old key can be dropped once none is left.

// ResealWebhook replaces a webhook's stored secret, if it is still Old:
// the same secret, sealed anew. A webhook deleted or re-sealed meanwhile
// is left alone.
type ResealWebhook struct {
	WebhookID string `msgpack:"webhook"`
	Old       string `msgpack:"old"`
	New       string `msgpack:"new"`
	Now       int64  `msgpack:"now"`
}

func (*ResealWebhook) Type() MessageType { return ResealWebhookType }

// applyResealWebhook reports whether it replaced the secret.
func (s *state) applyResealWebhook(c *ResealWebhook) (bool, error) {
	if c.New == "" {
		return false, fmt.Errorf("%w: reseal webhook %s without a secret", ErrInvalidCommand, c.WebhookID)
	}
	w, ok := s.webhooks[c.WebhookID]
	if !ok || w.Secret != c.Old {
		return false, nil
	}
	w.Secret = c.New
	return true, nil
}

// StoredSecret is a webhook's secret as the state keeps it.
type StoredSecret struct {
	WebhookID string
	Secret    string
}

// StoredSecrets returns every webhook's stored secret, by webhook id.
func (f *FSM) StoredSecrets() []StoredSecret {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.storedSecrets()
}

func (s *state) storedSecrets() []StoredSecret {
	out := make([]StoredSecret, 0, len(s.webhooks))
	for _, id := range slices.Sorted(maps.Keys(s.webhooks)) {
		out = append(out, StoredSecret{WebhookID: id, Secret: s.webhooks[id].Secret})
	}
	return out
}
