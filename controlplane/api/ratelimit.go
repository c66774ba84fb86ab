package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// Rate is N requests per Interval.
type Rate struct {
	Tokens   uint64
	Interval time.Duration
}

// Limits are the contract's rate limits. Each class may hold several windows
// (per minute, per hour, per day); a request must fit in all of them.
type Limits struct {
	Disabled      bool
	PerKey        []Rate
	PerAccount    []Rate
	CreatePremium []Rate
	CreateFree    []Rate
	// Media covers avatar create, brand-from-url, speech and uploads (one shared
	// budget per account, as the contract lists them on one line).
	Media []Rate
	// WebhookWrites covers webhook registration and deletion.
	WebhookWrites []Rate
}

// ContractLimits are the limits of the API contract.
func ContractLimits() Limits {
	return Limits{
		PerKey:        []Rate{{120, time.Minute}},
		PerAccount:    []Rate{{240, time.Minute}},
		CreatePremium: []Rate{{6, time.Minute}, {60, time.Hour}, {200, 24 * time.Hour}},
		CreateFree:    []Rate{{2, time.Minute}, {10, 24 * time.Hour}},
		Media:         []Rate{{5, time.Minute}, {100, 24 * time.Hour}},
		WebhookWrites: []Rate{{10, time.Minute}},
	}
}

// window is one limiter store for one rate.
type window struct {
	rate  Rate
	store limiter.Store
}

// limitClass is a named set of windows; keys are scoped by the caller (key id,
// account id). go-limiter's memory store keeps counts on this node only: a new
// leader starts with full buckets, which errs on the side of serving.
type limitClass struct {
	name    string
	windows []window
}

func newClass(name string, rates []Rate) (*limitClass, error) {
	c := &limitClass{name: name}
	for _, r := range rates {
		st, err := memorystore.New(&memorystore.Config{Tokens: r.Tokens, Interval: r.Interval, SweepMinTTL: max(r.Interval, time.Hour)})
		if err != nil {
			return nil, fmt.Errorf("rate limiter %s: %w", name, err)
		}
		c.windows = append(c.windows, window{rate: r, store: st})
	}
	return c, nil
}

// take spends one token of every window for key, stopping at the first that is
// empty, and says how long to wait when refused. A refused request may have spent
// tokens of the earlier windows: limits err on the strict side.
func (c *limitClass) take(ctx context.Context, key string) (ok bool, retryAfter int, limitText string, err error) {
	for _, w := range c.windows {
		_, _, reset, took, err := w.store.Take(ctx, key)
		if err != nil {
			return false, 0, "", fmt.Errorf("rate limiter %s: %w", c.name, err)
		}
		if !took {
			wait := time.Until(time.Unix(0, int64(reset)))
			secs := int((wait + time.Second - 1) / time.Second)
			return false, max(secs, 1), fmt.Sprintf("%d per %s", w.rate.Tokens, human(w.rate.Interval)), nil
		}
	}
	return true, 0, "", nil
}

// giveBack returns the token take spent in every window for key, to a
// window that is not full: a request the limit let through that then made
// nothing (refusalGivesBack) must not use the quota, or a client told 402
// that buys credits and retries finds itself rate limited. A window that
// rolled over since the take is full again and gets nothing.
func (c *limitClass) giveBack(ctx context.Context, key string) error {
	for _, w := range c.windows {
		limit, remaining, err := w.store.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("rate limiter %s: %w", c.name, err)
		}
		if remaining < limit {
			if err := w.store.Burst(ctx, key, 1); err != nil {
				return fmt.Errorf("rate limiter %s: %w", c.name, err)
			}
		}
	}
	return nil
}

func (c *limitClass) close(ctx context.Context) {
	for _, w := range c.windows {
		_ = w.store.Close(ctx)
	}
}

func human(d time.Duration) string {
	switch d {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return d.String()
}

type limiters struct {
	disabled                             bool
	perKey, perAccount, premium, freeAcc *limitClass
	// media and webhookWrites are per account; see Limits.
	media, webhookWrites *limitClass
	// hits counts the 429s by account (RateLimitHits).
	hits hitCounter
}

func newLimiters(l Limits) (*limiters, error) {
	out := &limiters{disabled: l.Disabled, hits: hitCounter{m: map[string]RateLimitHits{}}}
	var err error
	for _, c := range []struct {
		dst   **limitClass
		name  string
		rates []Rate
	}{
		{&out.perKey, "per_key", l.PerKey},
		{&out.perAccount, "per_account", l.PerAccount},
		{&out.premium, "create_premium", l.CreatePremium},
		{&out.freeAcc, "create_free", l.CreateFree},
		{&out.media, "media", l.Media},
		{&out.webhookWrites, "webhook_writes", l.WebhookWrites},
	} {
		if *c.dst, err = newClass(c.name, c.rates); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *limiters) close() {
	ctx := context.Background()
	for _, c := range []*limitClass{l.perKey, l.perAccount, l.premium, l.freeAcc, l.media, l.webhookWrites} {
		c.close(ctx)
	}
}

// check takes from class for an account's key and returns the 429 to send,
// or nil.
func (l *limiters) check(ctx context.Context, c *limitClass, scope, account string) *apierr.Error {
	return l.checkKey(ctx, c, scope, account, account)
}

// giveBack returns to class the token check took for account, for a
// request that made nothing after all; nil (no token was taken) gives
// nothing. It runs to the end even if the client has gone: the token is
// the account's either way.
func (l *limiters) giveBack(ctx context.Context, c *limitClass, account string) {
	if l.disabled || c == nil {
		return
	}
	// A broken limiter only errs on the strict side.
	_ = c.giveBack(context.WithoutCancel(ctx), account)
}

// refusalGivesBack reports whether a request refused with e, after the
// limit let it through, gets its token back: the account could not pay
// (402) or its key was in use (409), so it made nothing and the client's
// fix is to retry. Other refusals keep it (see createVideo).
func refusalGivesBack(e *apierr.Error) bool {
	return e.Status == http.StatusPaymentRequired || e.Status == http.StatusConflict
}

// checkKey takes from class for key, which belongs to account (an API
// key's id), and returns the 429 to send, or nil.
func (l *limiters) checkKey(ctx context.Context, c *limitClass, scope, key, account string) *apierr.Error {
	if l.disabled {
		return nil
	}
	ok, retry, text, err := c.take(ctx, key)
	if err != nil {
		// A broken limiter must not take the API down with it.
		return nil
	}
	if ok {
		return nil
	}
	l.hits.add(account, c.name)
	e := apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimited,
		fmt.Sprintf("rate limit of %s reached (%s); retry in %d s", text, scope, retry))
	e.RetryAfter = retry
	return e.With("limit", text).With("scope", scope)
}
