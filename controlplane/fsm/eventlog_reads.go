package fsm

import (
	"fmt"
	"slices"
)

// EventPage is a page of an account's event log, oldest first.
type EventPage struct {
	Events  []Event
	HasMore bool
}

// EventQuery selects a page of an account's event log.
type EventQuery struct {
	AccountID string
	// After is the id of the event the page follows; "" starts at the
	// oldest event kept.
	After string
	// Types keeps only events of these types; none keeps every type.
	Types []string
	Limit int
}

// Events lists a page of the account's event log, oldest first. It reads the
// log's index by account, or by account and type for one type: the cost is
// the page, not the account's history (several types read the account's
// index and skip the others). ErrEventNotFound when After is not an event of
// the account's log.
func (f *FSM) Events(q EventQuery) (EventPage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var from *groupPos
	if q.After != "" {
		e, ok := f.s.eventLog.get(q.After)
		if !ok || e.Event.AccountID != q.AccountID {
			return EventPage{}, fmt.Errorf("events after %s: %w", q.After, ErrEventNotFound)
		}
		from = &groupPos{int64(e.Seq), q.After}
	}
	group := q.AccountID
	if len(q.Types) == 1 {
		group = typeGroup(q.Types[0], q.AccountID)
	}
	var page EventPage
	var err error
	f.s.eventLog.walkGroup(group, from, false, func(_ string, e *LoggedEvent) bool {
		if len(q.Types) > 1 && !slices.Contains(q.Types, e.Event.Type) {
			return true
		}
		if len(page.Events) == q.Limit {
			page.HasMore = true
			return false
		}
		var ev Event
		if ev, err = f.s.loggedEvent(e); err != nil {
			return false
		}
		page.Events = append(page.Events, ev)
		return true
	})
	if err != nil {
		return EventPage{}, err
	}
	return page, nil
}

// loggedEvent is e as its readers see it, a copy of their own, its video
// as the record kept it (videoOfRecord).
func (s *state) loggedEvent(e *LoggedEvent) (Event, error) {
	ev := e.Event
	var err error
	if ev.Video, err = s.videoOfRecord(ev.Video, e.SpecByRef); err != nil {
		return Event{}, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	return ev, nil
}

// EventLogOn reports whether the event log records (StartEventLog).
func (f *FSM) EventLogOn() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.evlog.on
}

// EventSpecsByReference reports whether new events are logged without
// their video's spec (SpecsByReference).
func (f *FSM) EventSpecsByReference() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.evlog.specRef
}

// EventIDsSortable reports whether new created and processing events get
// ids that sort by their time (SortableEventIDs).
func (f *FSM) EventIDsSortable() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.evlog.sortable
}

// EventLogTrimDue reports whether the log holds an event created before
// before, which a TrimEventLog would forget.
func (f *FSM) EventLogTrimDue(before int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.eventLog.oldest(before, 1)) > 0
}
