package fsm

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// The account event log (GET /v1/events): every event of an account, oldest
// first, kept EventLogRetention. It is a table (table.go) keyed by event id,
// so a cursor is one lookup, with two group indexes whose order is the
// event's sequence number: by account, and by account and type. The
// sequence number, not the leader's clock, orders the log: it grows with
// every event applied, so an event written after a reader's page always
// comes after that page, even when a new leader's clock runs behind the old
// one's. Memory holds what changed since the last checkpoint; the file the
// rest.
//
// Recording starts with StartEventLog, proposed by the leader once every
// member's binary understands it (the upgrade gate), and never stops. A
// log written before it (or by an older binary) replays exactly as it did,
// recording nothing, and every replica starts recording at the same entry.

// Event types only the log records (no endpoint subscribes to them).
const (
	// EventVideoCreated is written when a video is created (queued, or a
	// free preview).
	EventVideoCreated = "video.created"
	// EventVideoProcessing is written when a video first leaves the queue.
	EventVideoProcessing = "video.processing"
)

// LogEventTypes are the types the event log records, in the order the API
// lists them: the log's own, then every webhook event type. An event goes
// to the log and to the subscribed endpoints alike through state.emit, so
// a new webhook event type is logged once it is in EventTypes.
var LogEventTypes = slices.Concat([]string{EventVideoCreated, EventVideoProcessing}, EventTypes)

// EventLogRetention is how long the log keeps an event.
const EventLogRetention = 30 * 24 * time.Hour

// bucketEventLog holds the log in the state file: event id → msgpack LoggedEvent.
const bucketEventLog = "event_log"

// LoggedEvent is one event of the log: the event as its webhook delivery
// carries it (the same id), and its place in the log.
type LoggedEvent struct {
	Seq   uint64 `msgpack:"seq"`
	Event Event  `msgpack:"event"`
	// SpecByRef says the event's video was logged without its spec, which
	// is read from the video's record (loggedEvent): every event logged
	// after SpecsByReference has it. Absent (false) before, so an older
	// event encodes as it did.
	SpecByRef bool `msgpack:"spec_ref,omitempty"`
}

// eventLog is the log's part of the hot state.
type eventLog struct {
	on  bool
	seq uint64 // the last sequence number given
	// sortable: created and processing events get ids that sort by their
	// time (SortableEventIDs).
	sortable bool
	// specRef: a video's events are logged without its spec
	// (SpecsByReference).
	specRef bool
	// derived: a new video's video.created event is read from its
	// record, not logged (DerivedCreatedEvents); keptFrom is the latest
	// TrimEventLog's Before, before which no derived event is listed.
	derived  bool
	keptFrom int64
}

// StartEventLog switches the event log on: from this entry on, every
// replica records every event.
type StartEventLog struct {
	Now int64 `msgpack:"now"`
}

// TrimEventLog forgets the log's events created before Before (the
// leader's clock minus EventLogRetention), oldest first, at most Limit of
// them, so one entry never deletes an unbounded backlog.
type TrimEventLog struct {
	Before int64 `msgpack:"before"`
	Limit  int   `msgpack:"limit"`
}

// SortableEventIDs gives the video.created and video.processing events
// applied from this entry on ids that sort by the events' time
// (sortableEventID) instead of ids hashed from the video's: the log's
// bucket is keyed by id, and a hashed id lands on a page of its own, so a
// checkpoint rewrote a page of the bucket for almost every such event once
// the bucket was large. It changes what an apply derives, so, like
// StartEventLog, it waits for every member to understand it; events logged
// before it keep their ids.
type SortableEventIDs struct {
	Now int64 `msgpack:"now"`
}

// SpecsByReference makes the log keep a video's events, and a create's
// idempotency record its answer, without the video's spec from this entry
// on: a spec never changes once the video is made, but for its duration
// (set from the rendered file), so a read (or a replay) takes it from the
// video's record and the duration from what was kept. A video's created,
// processing and final events each carried a copy of its prompt and every
// other field of its request for the log's 30 days, and its idempotency
// record one more for a day: with the benchmark's 52-character prompt a
// sixth of a created event's bytes (486 of them, 404 without), with a
// 1,000-character one 70% (1,436). Like
// SortableEventIDs it changes what an apply writes, so it waits for every
// member to understand it; it is kept with the log's state, so it needs the
// log on. What was written before keeps its copies.
type SpecsByReference struct {
	Now int64 `msgpack:"now"`
}

// keptVideo is v as a record that refers to its video keeps it once
// SpecsByReference is applied, and whether it refers: without its spec but
// for the duration. A record with no video (a webhook's event) keeps what
// it has.
func (s *state) keptVideo(v Video) (Video, bool) {
	if !s.evlog.specRef || v.ID == "" {
		return v, false
	}
	v.Spec = Spec{DurationSeconds: v.Spec.DurationSeconds}
	return v, true
}

// videoOfRecord is the video a record kept (keptVideo), a copy of the
// caller's own: one kept by reference gets the spec of its video's record
// with the duration it kept. Videos are never forgotten, so a missing
// record is a broken state (ErrInconsistent), not a hole to skip nor a
// video the client got wrong.
func (s *state) videoOfRecord(v Video, byRef bool) (Video, error) {
	v = v.Clone()
	if !byRef {
		return v, nil
	}
	rec, _, ok := s.lookupVideo(v.ID)
	if !ok {
		return Video{}, fmt.Errorf("the spec of video %s: no record of the video: %w", v.ID, ErrInconsistent)
	}
	d := v.Spec.DurationSeconds
	v.Spec = rec.Spec.Clone()
	v.Spec.DurationSeconds = d
	return v, nil
}

// DerivedCreatedEvents stops logging video.created events from this entry
// on: each new video's record keeps what its event says that the record
// does not (CreatedEventInfo, a few numbers and the wait reason), and the
// log's reads derive the event from it (createdEvent), in its place in the
// log. A created event was a record of its own with three index entries
// (by time, by account, by account and type): with every create writing
// one, half of what a checkpoint wrote per create and 7% of a create's
// CPU. Like SortableEventIDs it changes what an apply writes, so it waits
// for every member to understand it; it is kept with the log's state, so
// it needs the log on. Created events logged before it stay in the log.
type DerivedCreatedEvents struct {
	Now int64 `msgpack:"now"`
}

func (StartEventLog) Type() MessageType    { return StartEventLogType }
func (TrimEventLog) Type() MessageType     { return TrimEventLogType }
func (SortableEventIDs) Type() MessageType { return SortableEventIDsType }
func (SpecsByReference) Type() MessageType { return SpecsByReferenceType }
func (DerivedCreatedEvents) Type() MessageType {
	return DerivedCreatedEventsType
}

// applyStartEventLog answers whether it switched the log on (false: it was).
func (s *state) applyStartEventLog(*StartEventLog) (bool, error) {
	if s.evlog.on {
		return false, nil
	}
	s.evlog.on = true
	return true, nil
}

// applySortableEventIDs answers whether it switched sortable ids on
// (false: they were).
func (s *state) applySortableEventIDs(*SortableEventIDs) (bool, error) {
	return s.switchLogOn(&s.evlog.sortable, "sortable event ids")
}

// applySpecsByReference answers whether it switched keeping specs by
// reference on (false: it was).
func (s *state) applySpecsByReference(*SpecsByReference) (bool, error) {
	return s.switchLogOn(&s.evlog.specRef, "specs by reference")
}

// applyDerivedCreatedEvents answers whether it switched deriving created
// events on (false: it was).
func (s *state) applyDerivedCreatedEvents(*DerivedCreatedEvents) (bool, error) {
	return s.switchLogOn(&s.evlog.derived, "derived created events")
}

// switchLogOn turns on sw, a switch kept with the log's state (so it needs
// the log on), and answers whether it was off.
func (s *state) switchLogOn(sw *bool, what string) (bool, error) {
	if !s.evlog.on {
		return false, fmt.Errorf("%w: %s while the event log is off", ErrInvalidCommand, what)
	}
	was := *sw
	*sw = true
	return !was, nil
}

// applyTrimEventLog answers how many events it forgot.
func (s *state) applyTrimEventLog(c *TrimEventLog) (int, error) {
	if c.Limit <= 0 {
		return 0, fmt.Errorf("%w: trim the event log by a positive limit", ErrInvalidCommand)
	}
	keys := s.eventLog.oldest(c.Before, c.Limit)
	for _, k := range keys {
		s.eventLog.del(k)
	}
	if s.evlog.derived {
		// The derived events are not counted: they are not deleted, only
		// no longer listed.
		s.evlog.keptFrom = max(s.evlog.keptFrom, c.Before)
	}
	return len(keys), nil
}

// logEvent appends ev to its account's log, when the log is on.
func (s *state) logEvent(ev Event) {
	if !s.evlog.on {
		return
	}
	s.evlog.seq++
	e := &LoggedEvent{Seq: s.evlog.seq, Event: ev}
	// ev is this call's copy: the webhook's event keeps the spec.
	e.Event.Video, e.SpecByRef = s.keptVideo(ev.Video)
	// Every id is new: a video is created, first leaves the queue and ends
	// once, and each of those has its own id (videoEventID: a hash of the
	// type and the video, with the event's time ahead of half of it, or the
	// final event's id); so the file is not read to find out.
	s.eventLog.set(ev.ID, e, false)
}

// emitVideo writes v's event of type typ (see emit).
func (s *state) emitVideo(v *Video, typ string, now int64) {
	c := v.Clone()
	c.CreatedEvent = CreatedEventInfo{} // its created event's, not this one's
	s.emit(Event{ID: s.videoEventID(typ, v.ID, now), Type: typ, AccountID: v.AccountID, Video: c, Created: now})
}

// emitCreated writes the video.created event of v, a new video, with its
// place in the queue then (q). Once DerivedCreatedEvents is applied it
// only keeps in v what the event says that v does not: the event has no
// subscriber (it is not one of EventTypes), so nothing else would read it.
func (s *state) emitCreated(v *Video, q QueuedVideo, now int64) {
	if s.evlog.derived { // only ever set with the log on
		s.evlog.seq++
		v.CreatedEvent = CreatedEventInfo{Seq: s.evlog.seq, QueuePosition: q.QueuePosition, WaitReason: q.WaitReason,
			WaitMessage: q.WaitMessage, DurationSeconds: q.Spec.DurationSeconds, Preview: q.Status == StatusPreview}
		return
	}
	s.emit(Event{ID: s.videoEventID(EventVideoCreated, q.ID, now), Type: EventVideoCreated, AccountID: q.AccountID,
		Video: q.Video.Clone(), Created: now, QueuePosition: q.QueuePosition, WaitReason: q.WaitReason, WaitMessage: q.WaitMessage})
}

var eventIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// sortableEncoding is eventIDEncoding's alphabet in byte order, so that
// encoded ids sort as the bytes they encode do.
var sortableEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// videoEventID is the id of v's event of type typ. A video's final event
// keeps the id its webhook deliveries always had (EventID); the others are
// derived, so every replica makes the same: from the type and the video's
// id, and once SortableEventIDs is applied from the event's time too (the
// leader's, in the command).
func (s *state) videoEventID(typ, videoID string, now int64) string {
	if typ != EventVideoCreated && typ != EventVideoProcessing {
		return EventID(videoID)
	}
	// Built in stack buffers: the hashed input, the encoding and the
	// prefixed id were each allocated, on every replica's apply of a create;
	// now only the id is (BenchmarkApplyCreate: 29 → 27 allocations).
	var in [96]byte
	sum := sha256.Sum256(append(append(append(in[:0], typ...), 0), videoID...))
	if s.evlog.sortable { // only ever set with the log on
		return sortableEventID(now, sum)
	}
	return prefixedID(eventIDEncoding, sum[:16])
}

// prefixedID is "evt_" and b in enc, in one allocation (the ids' 16 bytes
// encode in the stack buffer).
func prefixedID(enc *base32.Encoding, b []byte) string {
	var out [32]byte
	return string(enc.AppendEncode(append(out[:0], "evt_"...), b))
}

// sortableEventID is evt_ and 26 characters, as a hashed id: the event's
// time in nanoseconds (big-endian, so ids sort by it and a checkpoint
// appends them to the log's bucket) and the first half of the hash of its
// type and video, which keeps two events of one instant apart. It says no
// more than the event's created field does; a sequence number would have
// told a customer how many events the whole farm had logged.
func sortableEventID(now int64, sum [32]byte) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now))
	copy(b[8:], sum[:8])
	return prefixedID(sortableEncoding, b[:])
}

// typeGroup names the log's index of an account's events of one type.
func typeGroup(typ, accountID string) string { return typ + "/" + accountID }

// eventLogRecords are the log's snapshot records: its state and (unless
// hotOnly: a checkpoint writes them one per key) its events by id. A state
// whose log never started has none, so it encodes as before the log.
func (s *state) eventLogRecords(hotOnly bool) []record {
	if !s.evlog.on {
		return nil
	}
	l := &s.evlog
	out := []record{{recEventLog, eventLogRecord{On: true, Seq: l.seq, Sortable: l.sortable, SpecRef: l.specRef,
		Derived: l.derived, KeptFrom: l.keptFrom}}}
	if !hotOnly {
		out = append(out, record{recTable, s.eventLog.snapshot(recLoggedEvent, "")})
	}
	return out
}

// Snapshot records of the event log.
const (
	recEventLog    recordType = 26
	recLoggedEvent recordType = 27
)

type eventLogRecord struct {
	On  bool   `msgpack:"on"`
	Seq uint64 `msgpack:"seq"`
	// Sortable is absent until SortableEventIDs, so an older state encodes
	// as before.
	Sortable bool `msgpack:"sortable,omitempty"`
	// SpecRef likewise until SpecsByReference.
	SpecRef bool `msgpack:"spec_ref,omitempty"`
	// Derived and KeptFrom likewise until DerivedCreatedEvents.
	Derived  bool  `msgpack:"derived,omitempty"`
	KeptFrom int64 `msgpack:"kept_from,omitempty"`
}

func (s *state) restoreEventLogRecord(t recordType, body []byte) error {
	if t == recEventLog {
		r, err := decodeRecord[eventLogRecord](body, "event log")
		s.evlog = eventLog{on: r.On, seq: r.Seq, sortable: r.Sortable, specRef: r.SpecRef,
			derived: r.Derived, keptFrom: r.KeptFrom}
		return err
	}
	e, err := decodeRecord[LoggedEvent](body, "logged event")
	if err != nil {
		return err
	}
	s.eventLog.restore(e.Event.ID, &e)
	return nil
}
