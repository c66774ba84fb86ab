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

// EachCreatedSince calls visit with every video (previews left out)
// created at or after since (Unix ns), account by account, newest first
// within one. It reads the accounts' lists in pages, from memory and the
// state file alike, and lets applies in between, so the answer is not one
// consistent view: a video created during the walk may or may not be in it.
func (f *FSM) EachCreatedSince(since int64, visit func(HistoryVideo)) {
	type acct struct{ id, plan string }
	f.mu.RLock()
	accts := make([]acct, 0, len(f.s.accounts))
	for id, a := range f.s.accounts {
		accts = append(accts, acct{id, a.Plan})
	}
	f.mu.RUnlock()
	page := make([]HistoryVideo, 0, historyPage)
	for _, a := range accts {
		var bound uint64
		for more := true; more; {
			page, more = page[:0], false
			f.mu.RLock()
			f.s.eachVideo(a.id, "", true, bound, func(v *Video, seq uint64) bool {
				if v.CreatedAt < since {
					return false
				}
				if len(page) == historyPage {
					more = true
					return false
				}
				bound = seq
				h := HistoryVideo{Video: *v, Plan: a.plan, Priority: priority(a.plan)}
				h.Timings = slices.Clone(v.Timings)
				page = append(page, h)
				return true
			})
			f.mu.RUnlock()
			for _, v := range page {
				if v.Status != StatusPreview {
					visit(v)
				}
			}
		}
	}
}
