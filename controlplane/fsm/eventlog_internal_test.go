package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A record kept by reference whose video's record is gone is a broken
// state: the log's read and a replay answer ErrInconsistent, which the API
// turns into an internal error, not ErrVideoNotFound, which it would turn
// into a 404 about the client's video.
func TestSpecByReferenceWithoutItsVideo(t *testing.T) {
	s := newState()
	now := int64(1e18)
	steps := []Command{
		&CreateAccount{AccountID: "a", Name: "a", Plan: PlanPro, Credits: 100, KeyID: "k", KeyHint: "k", Now: now},
		&StartEventLog{Now: now},
		&SpecsByReference{Now: now},
		&CreateVideo{VideoID: "vid_1", AccountID: "a", Spec: Spec{Mode: ModeAuto, Prompt: "p", DurationSeconds: 5, Orientation: "landscape"},
			Price: 1, IdempotencyKey: "key", Now: now},
	}
	for _, c := range steps {
		if _, err := s.apply(c); err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
	}
	f := &FSM{s: s}
	if page, err := f.Events(EventQuery{AccountID: "a", Limit: 10}); err != nil || len(page.Events) != 1 || page.Events[0].Video.Spec.Prompt != "p" {
		t.Fatalf("the log before: %+v, %v", page, err)
	}
	delete(s.videos, "vid_1")
	if _, err := f.Events(EventQuery{AccountID: "a", Limit: 10}); !errors.Is(err, ErrInconsistent) || errors.Is(err, ErrVideoNotFound) {
		t.Fatalf("the log without the video's record: %v, want ErrInconsistent alone", err)
	}
	replay := &CreateVideo{VideoID: "vid_2", AccountID: "a", Spec: Spec{Mode: ModeAuto, Prompt: "p", DurationSeconds: 5, Orientation: "landscape"},
		Price: 1, IdempotencyKey: "key", Now: now + 1}
	if _, err := s.apply(replay); !errors.Is(err, ErrInconsistent) || errors.Is(err, ErrVideoNotFound) {
		t.Fatalf("a replay without the video's record: %v, want ErrInconsistent alone", err)
	}
}

// TestEventIDsAsBefore: the ids built in stack buffers are the ones the
// plain formulas gave, so a log replayed by this binary names its events
// as the binary that wrote it did.
func TestEventIDsAsBefore(t *testing.T) {
	on := &state{evlog: eventLog{on: true}}
	sortable := &state{evlog: eventLog{on: true, sortable: true}}
	for i := range 500 {
		typ := []string{EventVideoCreated, EventVideoProcessing}[i%2]
		vid := fmt.Sprintf("vid_%x", sha256.Sum256([]byte{byte(i), byte(i >> 8)}))[:4+i%40]
		now := int64(i) * 1_234_567_891
		sum := sha256.Sum256([]byte(typ + "\x00" + vid))
		if got, want := on.videoEventID(typ, vid, now), "evt_"+eventIDEncoding.EncodeToString(sum[:16]); got != want {
			t.Fatalf("hashed id of %s %s = %q, want %q", typ, vid, got, want)
		}
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(now))
		copy(b[8:], sum[:8])
		if got, want := sortable.videoEventID(typ, vid, now), "evt_"+sortableEncoding.EncodeToString(b[:]); got != want {
			t.Fatalf("sortable id of %s %s at %d = %q, want %q", typ, vid, now, got, want)
		}
	}
	long := strings.Repeat("v", 300) // past the stack buffer: append grows it
	sum := sha256.Sum256([]byte(EventVideoCreated + "\x00" + long))
	if got, want := on.videoEventID(EventVideoCreated, long, 1), "evt_"+eventIDEncoding.EncodeToString(sum[:16]); got != want {
		t.Fatalf("hashed id of a long video id = %q, want %q", got, want)
	}
}

// A derived video.created event is hidden once TrimEventLog's time passes
// its video's creation, even where a new leader's clock ran behind and the
// videos' times do not grow with their order; a cursor on a hidden one is
// not an event of the log.
func TestDerivedCreatedEventsTrimmed(t *testing.T) {
	s := newState()
	f := &FSM{s: s}
	apply := func(c Command) {
		t.Helper()
		if _, err := s.apply(c); err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
	}
	apply(&CreateAccount{AccountID: "a", Name: "a", Plan: PlanPro, Credits: 100, KeyID: "k", KeyHint: "k", Now: 1})
	apply(&StartEventLog{Now: 1})
	apply(&DerivedCreatedEvents{Now: 1})
	for i, at := range []int64{100, 50, 200, 150, 300} { // a clock that ran behind twice
		apply(&CreateVideo{VideoID: fmt.Sprintf("vid_%d", i), AccountID: "a",
			Spec: Spec{Mode: ModeAuto, Prompt: "p", DurationSeconds: 5, Orientation: "landscape"}, Price: 1, Now: at})
	}
	listed := func() []string {
		page, err := f.Events(EventQuery{AccountID: "a", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range page.Events {
			ids = append(ids, e.Video.ID)
		}
		return ids
	}
	if got := fmt.Sprint(listed()); got != "[vid_0 vid_1 vid_2 vid_3 vid_4]" {
		t.Fatalf("before a trim: %s", got)
	}
	apply(&TrimEventLog{Before: 160, Limit: 10})
	if got := fmt.Sprint(listed()); got != "[vid_2 vid_4]" {
		t.Fatalf("after a trim at 160: %s, want the videos created at 200 and 300", got)
	}
	if _, err := f.Events(EventQuery{AccountID: "a", After: createdEventPrefix + "vid_3", Limit: 1}); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("after a hidden event: %v, want ErrEventNotFound", err)
	}
	page, err := f.Events(EventQuery{AccountID: "a", After: createdEventPrefix + "vid_2", Limit: 1})
	if err != nil || len(page.Events) != 1 || page.Events[0].Video.ID != "vid_4" || page.HasMore {
		t.Fatalf("after vid_2's event: %+v, %v", page, err)
	}
	apply(&TrimEventLog{Before: 100, Limit: 10}) // an older time hides no less
	if got := fmt.Sprint(listed()); got != "[vid_2 vid_4]" {
		t.Fatalf("after a trim at an older time: %s", got)
	}
}
