package fsm

import "slices"

// historyPage is how many videos EachCreatedSince reads under one hold of
// the state's read lock: applies wait for at most one page, not for a
// walk through a week of traffic.
const historyPage = 512

// HistoryVideo is a video as the farm's history sees it: what was asked,
// by which plan, when, and how long its tasks took.
type HistoryVideo struct {
	Video
	Plan     string
	Priority int
}

// Began is when the farm's state began: the creation of its oldest
// account (Unix ns), which comes before any video; 0 with no account. A
// twin of a farm younger than the window it reads spreads the farm's
// videos over the farm's life, not over hours before it existed.
func (f *FSM) Began() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var first int64
	for _, a := range f.s.accounts {
		if first == 0 || a.CreatedAt < first {
			first = a.CreatedAt
		}
	}
	return first
}

// EachCreatedSince calls visit with every video (previews left out)
// created at or after since (Unix ns), account by account, newest first
// within one. It reads the accounts' lists in pages, from memory and the
// state file alike, and lets applies in between, so the answer is not one
// consistent view: a video created during the walk may or may not be in it.
func (f *FSM) EachCreatedSince(since int64, visit func(HistoryVideo)) {
	type acct struct{ id, plan string }
	accts := func() []acct {
		f.mu.RLock()
		defer f.mu.RUnlock()
		accts := make([]acct, 0, len(f.s.accounts))
		for id, a := range f.s.accounts {
			accts = append(accts, acct{id, a.Plan})
		}
		return accts
	}()
	page := make([]HistoryVideo, 0, historyPage)
	for _, a := range accts {
		var bound uint64
		for more := true; more; {
			page, bound, more = f.createdPage(page[:0], a.id, a.plan, since, bound)
			for _, v := range page {
				if v.Status != StatusPreview {
					visit(v)
				}
			}
		}
	}
}

// createdPage appends to page up to historyPage of the account's videos
// created at or after since, newest first below bound (0: from the newest),
// under the read lock; it returns the page, the bound to go on from and
// whether there are more. The unlock is deferred: a read of the state file
// that panics must not leave every later apply waiting on the lock.
func (f *FSM) createdPage(page []HistoryVideo, account, plan string, since int64, bound uint64) ([]HistoryVideo, uint64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	more := false
	f.s.eachVideo(account, "", true, bound, func(v *Video, seq uint64) bool {
		if v.CreatedAt < since {
			return false
		}
		if len(page) == historyPage {
			more = true
			return false
		}
		bound = seq
		h := HistoryVideo{Video: *v, Plan: plan, Priority: priority(plan)}
		h.Timings = slices.Clone(v.Timings)
		page = append(page, h)
		return true
	})
	return page, bound, more
}
