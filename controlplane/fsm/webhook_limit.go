package fsm

// The contract allows "at most 5 active endpoints per account". A disabled
// endpoint (DisableWebhook, after days of failed attempts) is not active: it
// is sent nothing until the account enables it. Counting it would leave an
// account whose receiver died unable to register the one that replaces it.
// Which endpoints count changes what CreateWebhook and EnableWebhook
// decide, so every member must switch at the same entry: ActiveWebhookLimit
// switches it, proposed once every member understands it (like
// StartRouting); before it, every endpoint counts, as it always did.

// ActiveWebhookLimit makes MaxWebhooksPerAccount count an account's enabled
// endpoints only, from this entry on; enabling a disabled endpoint is then
// refused (ErrWebhookLimitReached) while the account has the most enabled.
type ActiveWebhookLimit struct {
	Now int64 `msgpack:"now"`
}

func (ActiveWebhookLimit) Type() MessageType { return ActiveWebhookLimitType }

// applyActiveWebhookLimit answers whether it switched the count (false: it
// was switched).
func (s *state) applyActiveWebhookLimit(*ActiveWebhookLimit) (bool, error) {
	was := s.activeWebhookLimit
	s.activeWebhookLimit = true
	return !was, nil
}

// countedWebhooks is how many of the account's endpoints count against
// MaxWebhooksPerAccount.
func (s *state) countedWebhooks(accountID string) int {
	ids := s.accountWebhooks[accountID]
	if !s.activeWebhookLimit {
		return len(ids)
	}
	n := 0
	for _, id := range ids {
		if !s.webhooks[id].Disabled() {
			n++
		}
	}
	return n
}

const recActiveWebhookLimit recordType = 29

// ActiveWebhookLimitOn reports whether the webhook limit counts enabled
// endpoints only (ActiveWebhookLimit).
func (f *FSM) ActiveWebhookLimitOn() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.activeWebhookLimit
}
