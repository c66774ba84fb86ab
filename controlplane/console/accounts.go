package console

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// The accounts pages:
//
//	GET /console/api/accounts[?q=TEXT&after=ID&limit=N] -> 200 AccountsJSON
//	GET /console/api/accounts/{id}                      -> 200 AccountJSON

// AccountsLimit is how many accounts a page lists unless asked for more.
const AccountsLimit = 50

// SpendDays is how many days (UTC, today included) an account's credits
// spent per day go back.
const SpendDays = 14

// SpendScanLimit bounds the videos read for an account's spending: an
// account that made more in SpendDays shows the newest SpendScanLimit and
// says so (spent_complete false).
const SpendScanLimit = 10_000

// AccountsJSON answers GET /console/api/accounts: accounts in id order.
type AccountsJSON struct {
	GeneratedAt time.Time        `json:"generated_at"`
	Accounts    []AccountRowJSON `json:"accounts"`
	Matched     int              `json:"matched"`
	// HasMore: the next page is ?after= the last account's id.
	HasMore bool `json:"has_more"`
}

// AccountRowJSON is one account in the list.
type AccountRowJSON struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Plan          string    `json:"plan"`
	Balance       int64     `json:"balance"`
	CreatedAt     time.Time `json:"created_at"`
	RateLimitHits uint64    `json:"rate_limit_hits"`
}

// AccountJSON answers GET /console/api/accounts/{id}.
type AccountJSON struct {
	GeneratedAt time.Time      `json:"generated_at"`
	Account     AccountRowJSON `json:"account"`
	// Videos counts the account's videos by status.
	Videos map[string]int `json:"videos"`
	// SpentPerDay is credits charged less refunds for the videos created
	// on each of the last SpendDays UTC days, oldest first.
	SpentPerDay []DaySpend `json:"spent_per_day"`
	// SpentComplete is false when the account made more than
	// SpendScanLimit videos in those days: only the newest are counted.
	SpentComplete bool `json:"spent_complete"`
	// RateLimitHits are the 429s this member answered the account since
	// it started (limits are counted per member).
	RateLimitHits api.RateLimitHits `json:"rate_limit_hits"`
}

// DaySpend is the credits spent on one day.
type DaySpend struct {
	Day     string `json:"day"` // YYYY-MM-DD, UTC
	Credits int64  `json:"credits"`
}

func (a *AccountsJSON) stamp(t time.Time) { a.GeneratedAt = t }
func (a *AccountJSON) stamp(t time.Time)  { a.GeneratedAt = t }

func (c *Console) accounts(w http.ResponseWriter, r *http.Request) { c.answer(w, r, c.accountsPage) }

func (c *Console) account(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c.answer(w, r, func(*http.Request) (any, error) { return c.accountPage(id) })
}

func (c *Console) hits(account string) api.RateLimitHits {
	if c.cfg.RateLimitHits == nil {
		return api.RateLimitHits{ByClass: map[string]uint64{}}
	}
	return c.cfg.RateLimitHits(account)
}

func (c *Console) row(a fsm.Account) AccountRowJSON {
	return AccountRowJSON{ID: a.ID, Name: a.Name, Plan: a.Plan, Balance: a.Credits,
		CreatedAt: time.Unix(0, a.CreatedAt).UTC(), RateLimitHits: c.hits(a.ID).Total}
}

func (c *Console) accountsPage(r *http.Request) (any, error) {
	limit, err := intParam(r, "limit", AccountsLimit, 1, 1000)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	p := c.cfg.FSM.Accounts(fsm.AccountFilter{Query: q.Get("q"), After: q.Get("after"), Limit: limit})
	out := AccountsJSON{GeneratedAt: c.cfg.Now().UTC(), Accounts: make([]AccountRowJSON, 0, len(p.Accounts)), Matched: p.Matched, HasMore: p.HasMore}
	for _, a := range p.Accounts {
		out.Accounts = append(out.Accounts, c.row(a))
	}
	return &out, nil
}

func (c *Console) accountPage(id string) (any, error) {
	f := c.cfg.FSM
	a, ok := f.Account(id)
	if !ok {
		return nil, apierr.NotFound("account")
	}
	now := c.cfg.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := today.AddDate(0, 0, -(SpendDays - 1))
	out := AccountJSON{GeneratedAt: now, Account: c.row(a), Videos: f.AccountVideoCounts(id), RateLimitHits: c.hits(id)}
	for d := range SpendDays {
		out.SpentPerDay = append(out.SpentPerDay, DaySpend{Day: first.AddDate(0, 0, d).Format(time.DateOnly)})
	}
	charges, complete := f.RecentCharges(id, first.UnixNano(), SpendScanLimit)
	out.SpentComplete = complete
	for _, ch := range charges {
		if d := int(time.Unix(0, ch.At).UTC().Sub(first) / (24 * time.Hour)); d >= 0 && d < SpendDays {
			out.SpentPerDay[d].Credits += ch.Net
		}
	}
	return &out, nil
}
