package fsm

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Reads for the operator's console (controlplane/console): accounts, their
// videos by status and their recent charges. None changes the state.

// AccountFilter selects accounts for a listing, by id.
type AccountFilter struct {
	// Query keeps the accounts whose id or name contains it (any case).
	Query string
	// After continues a listing after this account id.
	After string
	Limit int
}

// AccountPage is one page of accounts in id order.
type AccountPage struct {
	Accounts []Account
	Matched  int // every account the query matches
	HasMore  bool
}

// Accounts lists accounts in id order. Its cost is one pass over the
// accounts (held in memory) and a sort of those matched.
func (f *FSM) Accounts(flt AccountFilter) AccountPage {
	q := strings.ToLower(strings.TrimSpace(flt.Query))
	f.mu.RLock()
	defer f.mu.RUnlock()
	var ids []string
	for id, a := range f.s.accounts {
		if q == "" || strings.Contains(strings.ToLower(id), q) || strings.Contains(strings.ToLower(a.Name), q) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page := AccountPage{Matched: len(ids), Accounts: []Account{}}
	from, _ := slices.BinarySearch(ids, flt.After)
	if flt.After != "" && from < len(ids) && ids[from] == flt.After {
		from++
	}
	for _, id := range ids[from:] {
		if len(page.Accounts) == flt.Limit {
			page.HasMore = true
			break
		}
		page.Accounts = append(page.Accounts, *f.s.accounts[id])
	}
	return page
}

// VideoStatuses are the statuses a video can have, in the order of its life.
var VideoStatuses = []string{StatusPreview, StatusQueued, StatusProcessing, StatusCompleted, StatusFailed, StatusCanceled}

// AccountVideoCounts counts an account's videos by status, from the
// per-account counts the listings use (tiers.go): its cost grows with the
// account's videos in memory, not with its history on disk.
func (f *FSM) AccountVideoCounts(account string) map[string]int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[string]int, len(VideoStatuses))
	for _, st := range VideoStatuses {
		if n := f.s.countVideos(account, "s:"+st); n > 0 {
			out[st] = n
		}
	}
	return out
}

// VideoCharge is what one video cost its account: its charge less what was
// refunded (a failed video all of it, a canceled one what the cancel gave
// back), at the video's creation.
type VideoCharge struct {
	At  int64 // Video.CreatedAt
	Net int64
}

// RecentCharges lists the net charges of an account's videos created at or
// after since, newest first, reading at most limit videos; complete says
// whether every such video was read.
func (f *FSM) RecentCharges(account string, since int64, limit int) (charges []VideoCharge, complete bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	complete = true
	read := 0
	f.s.eachVideo(account, "", true, 0, func(v *Video, _ uint64) bool {
		if v.CreatedAt < since {
			return false // newest first: the rest are older
		}
		if read == limit {
			complete = false
			return false
		}
		read++
		if net := v.CreditsCharged - v.Refunded(); net != 0 {
			charges = append(charges, VideoCharge{At: v.CreatedAt, Net: net})
		}
		return true
	})
	return charges, complete
}

// TroubledWebhooks returns the endpoints that are disabled or whose latest
// attempt failed (FailingSince set), the latest trouble first, at most
// limit, and how many there are. Endpoints are few (5 an account) and in
// memory: one pass.
func (f *FSM) TroubledWebhooks(limit int) ([]Webhook, int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Webhook
	for _, w := range f.s.webhooks {
		if w.Disabled() || w.FailingSince != 0 {
			out = append(out, w.clone())
		}
	}
	latest := func(w Webhook) int64 { return max(w.LastFailedAt, w.DisabledAt) }
	slices.SortFunc(out, func(a, b Webhook) int {
		return cmp.Or(cmp.Compare(latest(b), latest(a)), strings.Compare(a.ID, b.ID))
	})
	return out[:min(limit, len(out))], len(out)
}

// OverdueLeases lists the running tasks past the q-th quantile of their
// class's recent service times (scheduler.State.Overdue).
func (f *FSM) OverdueLeases(now time.Time, q float64, minSamples int) []scheduler.OverdueLease {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.sched.Overdue(now, q, minSamples)
}
