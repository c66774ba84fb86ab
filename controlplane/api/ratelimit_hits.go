package api

import (
	"maps"
	"sync"
	"time"
)

// RateLimitHits is how often an account was answered 429 rate_limited by
// this member since it started. The limits themselves are counted per
// member (see limitClass), and so are these: another member, or this one
// after a restart, counts from zero.
type RateLimitHits struct {
	Total uint64 `json:"total"`
	// ByClass counts by limit: per_key, per_account, create_premium,
	// create_free, media, webhook_writes.
	ByClass map[string]uint64 `json:"by_class"`
	Last    time.Time         `json:"last"`
}

// hitCounter holds RateLimitHits by account id. It grows with the accounts
// that ever hit a limit on this member, one small entry each.
type hitCounter struct {
	mu sync.Mutex
	m  map[string]RateLimitHits
}

func (h *hitCounter) add(account, class string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.m[account]
	if x.ByClass == nil {
		x.ByClass = map[string]uint64{}
	}
	x.Total++
	x.ByClass[class]++
	x.Last = time.Now().UTC()
	h.m[account] = x
}

func (h *hitCounter) get(account string) RateLimitHits {
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.m[account]
	x.ByClass = maps.Clone(x.ByClass)
	if x.ByClass == nil {
		x.ByClass = map[string]uint64{}
	}
	return x
}

// RateLimitHits is how often this member answered the account 429.
func (a *API) RateLimitHits(account string) RateLimitHits { return a.lim.hits.get(account) }
