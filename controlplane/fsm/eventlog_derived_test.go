package fsm_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestDerivedCreatedEventsListAsLogged runs random logs through two FSMs,
// one of them applying DerivedCreatedEvents at some step, and checks that
// both list every account's event log alike, page by page with each its
// own cursors, but for the ids of the derived video.created events:
// whatever a command does to a video after it was created, the event read
// from its record is the one the log would have kept. Trims forget every
// event before their time (a limit above the log's size), as the derived
// events are only ever hidden whole. The derived one has a state file and
// checkpoints, so that events are derived from videos in memory and on
// disk; every other answer is the same but for the records' CreatedEvent.
func TestDerivedCreatedEventsListAsLogged(t *testing.T) {
	var derivedSeen int // runs that listed a derived event
	defer func() {
		t.Logf("runs that listed a derived created event: %d", derivedSeen)
		if !t.Failed() && derivedSeen == 0 {
			t.Error("no run listed a derived event: the test misses what it is for")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		g := newCmdGen()
		g.farm = rapid.Bool().Draw(rt, "farm")
		derived, plain := openStore(rt, tempStorePath(rt)), fsm.New()
		defer derived.Close()
		apply := applyToBoth(rt, g, derived, plain, fsm.DerivedCreatedEventsType, func(c fsm.Command, a, b answer) bool {
			_, trim := c.(*fsm.TrimEventLog) // counts only the records it deleted
			return trim || reflect.DeepEqual(withoutCreatedEvents(a), b)
		})
		g.logOn = true
		apply(&fsm.StartEventLog{Now: g.now})
		apply(&fsm.RegisterNode{NodeID: "node_all", Name: "all", CredHash: keyHash("all"), Node: farmNode(), Now: g.now})
		switchAt := rapid.IntRange(0, 10).Draw(rt, "switch_at")
		for step := range rapid.IntRange(1, 200).Draw(rt, "n") {
			switch c := g.next(rt); {
			case step == switchAt:
				apply(&fsm.DerivedCreatedEvents{Now: g.now})
			case rapid.IntRange(0, 19).Draw(rt, "checkpoint") == 0:
				snapshotBytes(t, derived)
			case rapid.IntRange(0, 3).Draw(rt, "render") == 0:
				renderLeased(rt, g, apply)
			default:
				if tr, ok := c.(*fsm.TrimEventLog); ok {
					tr.Limit = 1 << 20
				}
				if _, ok := c.(*fsm.DerivedCreatedEvents); ok {
					break // the step above is the one switch
				}
				apply(c)
			}
		}
		if sameEventLogsButCreatedIDs(rt, g, derived, plain) {
			derivedSeen++
		}
	})
}

// sameEventLogsButCreatedIDs pages through every account's log in both,
// two events at a time, unfiltered, by each type and by two types, each
// FSM with its own cursor, and compares the pages but for the ids of
// derived events. Then a derived event's id is a cursor of its account's
// log exactly when the log lists it. It reports whether a derived event
// was listed.
func sameEventLogsButCreatedIDs(t *rapid.T, g *cmdGen, derived, logged *fsm.FSM) bool {
	listed := map[string]bool{}
	filters := [][]string{nil, {fsm.EventVideoCompleted, fsm.EventVideoFailed}, {fsm.EventVideoCreated, fsm.EventVideoFailed}}
	for _, typ := range fsm.LogEventTypes {
		filters = append(filters, []string{typ})
	}
	for _, id := range append(g.accounts, "missing_acct") {
		for _, types := range filters {
			qa := fsm.EventQuery{AccountID: id, Types: types, Limit: 2}
			qb := qa
			for range 400 {
				x, errx := derived.Events(qa)
				y, erry := logged.Events(qb)
				if !reflect.DeepEqual(answerOf(createdIDsOf(x, y), errx), answerOf(y, erry)) {
					t.Fatalf("event log of %s %v differs:\n%#v\n%#v", id, types, x, y)
				}
				for _, e := range x.Events {
					if strings.HasPrefix(e.ID, "evt_created_") {
						listed[e.ID] = true
					}
				}
				if errx != nil || !x.HasMore {
					break
				}
				qa.After, qb.After = x.Events[len(x.Events)-1].ID, y.Events[len(y.Events)-1].ID
			}
		}
	}
	for _, v := range g.videos {
		id := "evt_created_" + v
		page, err := derived.Events(fsm.EventQuery{AccountID: g.videoAcct[v], After: id, Limit: 1})
		switch {
		case errors.Is(err, fsm.ErrEventNotFound) == listed[id]:
			t.Fatalf("events after %s: %v, and the log listed it: %v", id, err, listed[id])
		case err == nil && len(page.Events) == 1 && page.Events[0].ID == id:
			t.Fatalf("the page after %s starts with it", id)
		}
		if _, err := derived.Events(fsm.EventQuery{AccountID: "missing_acct", After: "evt_created_" + v, Limit: 1}); !errors.Is(err, fsm.ErrEventNotFound) {
			t.Fatalf("another account's page after %s's created event: %v, want ErrEventNotFound", v, err)
		}
	}
	return len(listed) > 0
}

// createdIDsOf is x with the ids of its derived created events replaced
// by those of the events at the same places of y, when they are there.
func createdIDsOf(x, y fsm.EventPage) fsm.EventPage {
	x.Events = append([]fsm.Event(nil), x.Events...)
	for i := range x.Events {
		if strings.HasPrefix(x.Events[i].ID, "evt_created_") && i < len(y.Events) {
			x.Events[i].ID = y.Events[i].ID
		}
	}
	return x
}

// withoutCreatedEvents is a copy of a with every fsm.CreatedEventInfo in
// it zero: what the FSM that logs its created events answers.
func withoutCreatedEvents(a answer) answer {
	if a.V != nil {
		v := reflect.ValueOf(a.V)
		c := reflect.New(v.Type()).Elem()
		zeroCreatedEvents(c, v)
		a.V = c.Interface()
	}
	return a
}

var createdEventInfo = reflect.TypeFor[fsm.CreatedEventInfo]()

// zeroCreatedEvents copies from into to, deeply, leaving every
// CreatedEventInfo zero.
func zeroCreatedEvents(to, from reflect.Value) {
	switch from.Kind() {
	case reflect.Struct:
		if from.Type() == createdEventInfo {
			to.SetZero()
			return
		}
		to.Set(from) // the unexported fields, as they are
		for i := range from.NumField() {
			if to.Field(i).CanSet() {
				zeroCreatedEvents(to.Field(i), from.Field(i))
			}
		}
	case reflect.Pointer:
		if !from.IsNil() {
			to.Set(reflect.New(from.Type().Elem()))
			zeroCreatedEvents(to.Elem(), from.Elem())
		}
	case reflect.Slice:
		if !from.IsNil() {
			to.Set(reflect.MakeSlice(from.Type(), from.Len(), from.Len()))
			for i := range from.Len() {
				zeroCreatedEvents(to.Index(i), from.Index(i))
			}
		}
	case reflect.Map:
		if !from.IsNil() {
			to.Set(reflect.MakeMapWithSize(from.Type(), from.Len()))
			for it := from.MapRange(); it.Next(); {
				e := reflect.New(from.Type().Elem()).Elem()
				zeroCreatedEvents(e, it.Value())
				to.SetMapIndex(it.Key(), e)
			}
		}
	default:
		to.Set(from)
	}
}
