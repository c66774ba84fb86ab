package fsm

import (
	"fmt"
	"slices"
	"strings"
	"time"
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
// log's index by account, or by account and type for one type, and the
// account's videos created since DerivedCreatedEvents for their
// video.created events, merged by the log's sequence number: the cost is the page, not
// the account's history (several types read the account's index and skip
// the others). ErrEventNotFound when After is not an event of the
// account's log.
func (f *FSM) Events(q EventQuery) (EventPage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.s
	var from *groupPos
	if q.After != "" {
		p, ok := s.eventPlace(q.AccountID, q.After)
		if !ok {
			return EventPage{}, fmt.Errorf("events after %s: %w", q.After, ErrEventNotFound)
		}
		from = &p
	}
	group := q.AccountID
	if len(q.Types) == 1 {
		group = typeGroup(q.Types[0], q.AccountID)
	}
	// Up to a page and one more from each source, merged by sequence
	// number: the one more says whether there are more.
	var logged []*LoggedEvent
	s.eventLog.walkGroup(group, from, false, func(_ string, e *LoggedEvent) bool {
		if len(q.Types) > 1 && !slices.Contains(q.Types, e.Event.Type) {
			return true
		}
		logged = append(logged, e)
		return len(logged) <= q.Limit
	})
	var derived []*Video
	if s.evlog.derived && (len(q.Types) == 0 || slices.Contains(q.Types, EventVideoCreated)) {
		after := uint64(0)
		if from != nil {
			after = uint64(from.at)
		}
		derived = s.derivedCreated(q.AccountID, after, q.Limit+1)
	}
	var page EventPage
	for len(logged)+len(derived) > 0 {
		if len(page.Events) == q.Limit {
			page.HasMore = true
			break
		}
		if len(derived) > 0 && (len(logged) == 0 || derived[0].CreatedEvent.Seq < logged[0].Seq) {
			page.Events = append(page.Events, createdEvent(derived[0]))
			derived = derived[1:]
			continue
		}
		ev, err := s.loggedEvent(logged[0])
		if err != nil {
			return EventPage{}, err
		}
		page.Events = append(page.Events, ev)
		logged = logged[1:]
	}
	return page, nil
}

// eventPlace finds the event id of the account's log: its place in the
// log's groups, whose time is the event's sequence number.
func (s *state) eventPlace(account, id string) (groupPos, bool) {
	if e, ok := s.eventLog.get(id); ok {
		return groupPos{int64(e.Seq), id}, e.Event.AccountID == account
	}
	vid, ok := strings.CutPrefix(id, createdEventPrefix)
	if !ok || !s.evlog.derived {
		return groupPos{}, false
	}
	v, _, ok := s.lookupVideo(vid)
	if !ok || v.AccountID != account || v.CreatedEvent.Seq == 0 || v.CreatedAt < s.evlog.keptFrom {
		return groupPos{}, false
	}
	return groupPos{int64(v.CreatedEvent.Seq), id}, true
}

// createdEventPrefix starts the id of a derived video.created event, which
// the video's id ends: the id says which video to read the event from, and
// nothing a client does not know. A logged event's id is evt_ and 26
// characters of base32, none of them an underscore.
const createdEventPrefix = "evt_created_"

// derivedCreated returns up to n of the account's videos whose
// video.created events are derived, still kept and past the log's sequence
// number after, oldest first: the videos are in the order of their events.
// Video sequence numbers are not compared with anything kept elsewhere: a
// restore numbers the videos afresh, keeping only each account's order.
func (s *state) derivedCreated(account string, after uint64, n int) []*Video {
	// A video created before DerivedCreatedEvents has no sequence number
	// of its own here (0), so it is skipped like one the page follows.
	skip := func(v *Video) bool { return v.CreatedEvent.Seq <= after || v.CreatedAt < s.evlog.keptFrom }
	var out []*Video
	s.eachVideo(account, "", false, s.skipVideos(account, skip), func(v *Video, _ uint64) bool {
		if !skip(v) {
			out = append(out, v)
		}
		return len(out) < n
	})
	return out
}

// skipVideos is a video sequence number up to which skip holds for every
// one of the account's videos, so that a page does not read them one by
// one (those created before the switch, those the page follows, those
// TrimEventLog no longer lists). It searches the sequence numbers by
// halves, reading the account's first video past each: skip must hold for
// a first run of the account's videos and not after. It does for the
// videos before the switch and for the event order; for the kept time as
// videos are created in the order of the leader's clock, and where a new
// leader's clock ran behind, the videos around the kept time may be listed
// for a little less than EventLogRetention, never one created before it
// (derivedCreated checks each).
func (s *state) skipVideos(account string, skip func(*Video) bool) uint64 {
	// skipped reports whether skip holds for the account's first video
	// past seq (false: there is none).
	skipped := func(seq uint64) bool {
		yes := false
		s.eachVideo(account, "", false, seq, func(v *Video, _ uint64) bool {
			yes = skip(v)
			return false
		})
		return yes
	}
	lo, hi := uint64(0), s.videoSeq // skipped(lo) or lo == 0; !skipped(hi)
	if !skipped(lo) {
		return 0
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if skipped(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// createdEvent is the video.created event derived from v's record
// (DerivedCreatedEvents): the video as applyCreateVideo made it, a copy of
// the caller's own.
func createdEvent(v *Video) Event {
	c := &v.CreatedEvent
	created := Video{ID: v.ID, AccountID: v.AccountID, Spec: v.Spec.Clone(), Status: StatusQueued, CreditsCharged: v.Price,
		Price: v.Price, CreatedAt: v.CreatedAt, UpdatedAt: v.CreatedAt}
	created.Spec.DurationSeconds = c.DurationSeconds
	if c.Preview {
		created.Status, created.CreditsCharged = StatusPreview, 0
	}
	return Event{ID: createdEventPrefix + v.ID, Type: EventVideoCreated, AccountID: v.AccountID, Video: created,
		Created: v.CreatedAt, QueuePosition: c.QueuePosition, WaitReason: c.WaitReason, WaitMessage: c.WaitMessage}
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
// before, which a TrimEventLog would forget, or whether the derived events
// are listed from more than a minute before it.
func (f *FSM) EventLogTrimDue(before int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.s.evlog.derived && before-f.s.evlog.keptFrom > int64(time.Minute) {
		return true
	}
	return len(f.s.eventLog.oldest(before, 1)) > 0
}

// CreatedEventsDerived reports whether new videos' video.created events
// are derived from their records rather than logged (DerivedCreatedEvents).
func (f *FSM) CreatedEventsDerived() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.evlog.derived
}
