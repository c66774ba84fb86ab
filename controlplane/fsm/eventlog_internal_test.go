package fsm

import (
	"errors"
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
