package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// logEntry is an event as the tests compare it: id, type and video.
type logEntry struct{ id, typ, video string }

func loggedOf(es []fsm.Event) []logEntry {
	out := make([]logEntry, 0, len(es))
	for _, e := range es {
		out = append(out, logEntry{e.ID, e.Type, e.Video.ID})
	}
	return out
}

// eventLog pages through an account's log in both FSMs, limit at a time,
// checks they list alike, and returns the events.
func (p *pair) eventLog(account string, types []string, limit int) []fsm.Event {
	p.t.Helper()
	var all []fsm.Event
	q := fsm.EventQuery{AccountID: account, Types: types, Limit: limit}
	for range 1000 {
		x, errx := p.mem.Events(q)
		y, erry := p.disk.Events(q)
		if errx != nil || erry != nil {
			p.t.Fatalf("events %+v: memory %v, file %v", q, errx, erry)
		}
		if !reflect.DeepEqual(x, y) {
			p.t.Fatalf("events %+v: the file lists %v, memory %v", q, loggedOf(y.Events), loggedOf(x.Events))
		}
		if len(x.Events) > limit || (x.HasMore && len(x.Events) < limit) {
			p.t.Fatalf("events %+v: page of %d, has_more %v", q, len(x.Events), x.HasMore)
		}
		all = append(all, x.Events...)
		if !x.HasMore {
			return all
		}
		q.After = x.Events[len(x.Events)-1].ID
	}
	p.t.Fatal("the event log does not end")
	return nil
}

func ofType(es []logEntry, types ...string) []logEntry {
	return slices.DeleteFunc(slices.Clone(es), func(e logEntry) bool { return !slices.Contains(types, e.typ) })
}

// TestEventLog runs one account's videos through every event the log
// records, with a state in memory and one with a file, and checks what each
// lists, in which order, by type, across a checkpoint, a restart and trims.
func TestEventLog(t *testing.T) {
	p := newPair(t)
	now := t0
	p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 1000, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
	p.apply(&fsm.CreateAccount{AccountID: "b", Name: "b", Plan: fsm.PlanPro, Credits: 1000, KeyID: "kb", KeyHash: keyHash("kb"), KeyHint: "k", Now: now})
	p.apply(&fsm.CreateWebhook{WebhookID: "whk_1", AccountID: "a", URL: "https://h.example/1", Events: []string{fsm.EventVideoFailed}, Secret: "whsec_1", Now: now})
	p.apply(&fsm.RegisterNode{NodeID: "node_1", Name: "n1", CredHash: [32]byte{1}, Node: farmNode(), Now: now})

	// Before the log is switched on nothing is recorded: a log written by an
	// older binary replays as it did.
	p.apply(createVideo("vid_before", "a", 1, "", "", now))
	p.apply(&fsm.FailVideo{VideoID: "vid_before", Reason: "operator", Now: now})
	if es := p.eventLog("a", nil, 10); len(es) != 0 || p.mem.EventLogOn() {
		t.Fatalf("before StartEventLog the log holds %v", loggedOf(es))
	}
	if _, ok := p.disk.Event(fsm.EventID("vid_before")); !ok {
		t.Fatal("the webhook event of a video failed before the log is missing")
	}
	if on := p.apply(&fsm.StartEventLog{Now: now}).(bool); !on {
		t.Fatal("StartEventLog answered false on a log that was off")
	}
	if on := p.apply(&fsm.StartEventLog{Now: now}).(bool); on {
		t.Fatal("StartEventLog answered true on a log already on")
	}

	var want []logEntry
	step := func(c fsm.Command, events ...logEntry) {
		t.Helper()
		now += int64(time.Minute)
		p.apply(c)
		want = append(want, events...)
	}
	created := func(v string) logEntry {
		es := p.eventLog("a", []string{fsm.EventVideoCreated}, 100)
		return logEntry{es[len(es)-1].ID, fsm.EventVideoCreated, v}
	}
	for i := range 6 {
		v := fmt.Sprintf("vid_%d", i)
		step(&fsm.CreateVideo{VideoID: v, AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: now})
		want = append(want, created(v))
	}
	// vid_0 and vid_1 leave the queue (their render tasks are leased).
	for _, v := range []string{"vid_0", "vid_1"} {
		res := p.apply(&fsm.LeaseTask{NodeID: "node_1", LeaseMS: 60_000, Now: now}).(fsm.LeaseResult)
		if !res.Found || res.Lease.VideoID != v {
			t.Fatalf("lease: %+v, want a task of %s", res, v)
		}
		es := p.eventLog("a", []string{fsm.EventVideoProcessing}, 100)
		want = append(want, logEntry{es[len(es)-1].ID, fsm.EventVideoProcessing, v})
	}
	step(createVideo("vid_b", "b", 1, "", "", now)) // another account's
	step(&fsm.FailVideo{VideoID: "vid_0", Reason: "operator", Now: now}, logEntry{fsm.EventID("vid_0"), fsm.EventVideoFailed, "vid_0"})
	step(&fsm.CancelVideo{VideoID: "vid_1", AccountID: "a", Now: now}, logEntry{fsm.EventID("vid_1"), fsm.EventVideoCanceled, "vid_1"})
	step(&fsm.CancelVideo{VideoID: "vid_2", AccountID: "a", Now: now}, logEntry{fsm.EventID("vid_2"), fsm.EventVideoCanceled, "vid_2"})

	all := p.eventLog("a", nil, 100)
	if got := loggedOf(all); !reflect.DeepEqual(got, want) {
		t.Fatalf("the log lists\n%v\nwant\n%v", got, want)
	}
	// The failure went to the webhook too: the same id and the same event.
	if e, ok := p.mem.Event(fsm.EventID("vid_0")); !ok || !reflect.DeepEqual(e, all[8]) {
		t.Fatalf("webhook event %+v (%v), log event %+v", e, ok, all[8])
	}
	for i, e := range all {
		if e.AccountID != "a" || e.Video.AccountID != "a" || (i > 0 && e.Created < all[i-1].Created) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	if e := all[6]; e.Video.Status != fsm.StatusProcessing || e.Video.StartedAt != e.Created {
		t.Fatalf("processing event holds the video as %s, started %d", e.Video.Status, e.Video.StartedAt)
	}
	if b := p.eventLog("b", nil, 1); len(b) != 1 || b[0].Type != fsm.EventVideoCreated || b[0].Video.ID != "vid_b" {
		t.Fatalf("account b's log: %v", loggedOf(b))
	}

	processing := want[6].id
	filters := [][]string{nil, {fsm.EventVideoCreated}, {fsm.EventVideoProcessing}, {fsm.EventVideoCanceled},
		{fsm.EventVideoFailed, fsm.EventVideoCanceled}, {fsm.EventVideoCompleted}}
	check := func(when string) {
		t.Helper()
		for _, types := range filters {
			for _, limit := range []int{1, 2, 3, 100} {
				w := want
				if types != nil {
					w = ofType(want, types...)
				}
				if got := loggedOf(p.eventLog("a", types, limit)); !reflect.DeepEqual(got, w) && (len(got) > 0 || len(w) > 0) {
					t.Fatalf("%s: types %v, limit %d: %v, want %v", when, types, limit, got, w)
				}
			}
		}
		for _, q := range []fsm.EventQuery{
			{AccountID: "a", After: "evt_none", Limit: 5},
			{AccountID: "b", After: want[0].id, Limit: 5}, // a's event, asked by b
		} {
			for _, f := range []*fsm.FSM{p.mem, p.disk} {
				if _, err := f.Events(q); !errors.Is(err, fsm.ErrEventNotFound) {
					t.Fatalf("%s: events %+v: %v, want ErrEventNotFound", when, q, err)
				}
			}
		}
		// A cursor of another type than the filter's starts after its place.
		if i := slices.IndexFunc(want, func(e logEntry) bool { return e.id == processing }); i >= 0 {
			q := fsm.EventQuery{AccountID: "a", After: processing, Types: []string{fsm.EventVideoCreated}, Limit: 5}
			page, err := p.disk.Events(q)
			if w := ofType(want[i+1:], fsm.EventVideoCreated); err != nil || !reflect.DeepEqual(loggedOf(page.Events), w) {
				t.Fatalf("%s: created events after a processing one: %v %v, want %v", when, loggedOf(page.Events), err, w)
			}
		}
	}
	check("in memory")
	if got := p.inMemory()["event_log"]; got != len(want)+1 {
		t.Fatalf("before a checkpoint %d events in memory, want %d", got, len(want)+1)
	}

	// After a checkpoint the log is served from the file alone.
	p.same("checkpoint")
	if got := p.inMemory()["event_log"]; got != 0 {
		t.Fatalf("after a checkpoint %d events in memory, want none", got)
	}
	if st := p.disk.Stats(); st.LoggedEvents != len(want)+1 {
		t.Fatalf("%d events counted, want %d", st.LoggedEvents, len(want)+1)
	}
	check("from the file")
	// New events merge with the file's.
	step(&fsm.CreateVideo{VideoID: "vid_9", AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: now})
	want = append(want, created("vid_9"))
	check("both tiers")
	p.same("before a restart")
	p.restart()
	if got := p.inMemory()["event_log"]; got != 0 || !p.disk.EventLogOn() {
		t.Fatalf("after a restart %d events in memory (log on: %v), want none", got, p.disk.EventLogOn())
	}
	p.same("restart")
	check("after a restart")

	// Trimming forgets the oldest first, Limit at a time, by creation time.
	p.refuse(&fsm.TrimEventLog{Before: now, Limit: 0}, fsm.ErrInvalidCommand)
	cut := all[3].Created + 1 // a's first four; b's came later
	if !p.disk.EventLogTrimDue(cut) || p.disk.EventLogTrimDue(all[0].Created) {
		t.Fatal("EventLogTrimDue: want true past the oldest event only")
	}
	if n := p.apply(&fsm.TrimEventLog{Before: cut, Limit: 2}).(int); n != 2 {
		t.Fatalf("trimmed %d, want 2", n)
	}
	want = want[2:]
	check("after a trim of two")
	p.same("trim written")
	if n := p.apply(&fsm.TrimEventLog{Before: cut, Limit: 100}).(int); n != 2 {
		t.Fatalf("trimmed %d, want the other 2", n)
	}
	want = want[2:]
	check("after the trim")
	if got := p.inMemory()["event_log"]; got != 2 {
		t.Fatalf("%d records in memory after the trim, want its 2 deletions", got)
	}
	p.same("second trim written")
	if st := p.disk.Stats(); st.LoggedEvents != len(want)+1 || p.inMemory()["event_log"] != 0 {
		t.Fatalf("%d events counted (%d in memory), want %d", st.LoggedEvents, p.inMemory()["event_log"], len(want)+1)
	}
	if b := p.eventLog("b", nil, 1); len(b) != 1 {
		t.Fatalf("b's event, created after the cut, is gone: %v", loggedOf(b))
	}
	check("after the trims were written")
}

// TestEventLogOrderIsApplyOrder: a leader whose clock runs behind the one
// before it stamps an event earlier than events already listed; the log
// still lists it after them, so a reader following its cursor gets it.
func TestEventLogOrderIsApplyOrder(t *testing.T) {
	p := newPair(t)
	p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 1000, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: t0})
	p.apply(&fsm.StartEventLog{Now: t0})
	p.apply(createVideo("vid_1", "a", 1, "", "", t0+int64(time.Hour)))
	read := p.eventLog("a", nil, 10)
	cursor := read[len(read)-1].ID
	for i, when := range []string{"in memory", "from the file"} {
		v := fmt.Sprintf("vid_behind_%d", i)
		p.apply(createVideo(v, "a", 1, "", "", t0)) // the new leader's clock: an hour behind
		for _, f := range []*fsm.FSM{p.mem, p.disk} {
			page, err := f.Events(fsm.EventQuery{AccountID: "a", After: cursor, Limit: 10})
			if err != nil || len(page.Events) != 1 || page.Events[0].Video.ID != v {
				t.Fatalf("%s: after the last event read: %v %v, want %s's", when, loggedOf(page.Events), err, v)
			}
			cursor2 := page.Events[0].ID
			if page, _ := f.Events(fsm.EventQuery{AccountID: "a", After: cursor2, Limit: 10}); len(page.Events) != 0 {
				t.Fatalf("%s: after the newest: %v", when, loggedOf(page.Events))
			}
		}
		cursor = p.eventLog("a", nil, 10)[i+1].ID
		p.same(when)
	}
}

// TestSortableEventIDs: once SortableEventIDs is applied, new created and
// processing events get ids that sort by their time, so the log's bucket is
// appended to; two of one instant get two ids; the events logged before
// keep their ids, a final event keeps its webhook id, cursors work across
// the switch, and the switch survives a checkpoint and a restart.
func TestSortableEventIDs(t *testing.T) {
	p := newPair(t)
	now := t0
	p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 1000, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
	p.apply(&fsm.RegisterNode{NodeID: "node_1", Name: "n1", CredHash: [32]byte{1}, Node: farmNode(), Now: now})
	p.refuse(&fsm.SortableEventIDs{Now: now}, fsm.ErrInvalidCommand) // the switch is kept with the log's state
	p.apply(&fsm.StartEventLog{Now: now})
	create := func(v string) {
		t.Helper()
		now += int64(time.Second)
		p.apply(&fsm.CreateVideo{VideoID: v, AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: now})
	}
	for i := range 3 {
		create(fmt.Sprintf("vid_hashed_%d", i))
	}
	hashed := loggedOf(p.eventLog("a", nil, 100))
	if p.mem.EventIDsSortable() || p.disk.EventIDsSortable() {
		t.Fatal("ids sortable before SortableEventIDs")
	}
	if on := p.apply(&fsm.SortableEventIDs{Now: now}).(bool); !on || !p.mem.EventIDsSortable() || !p.disk.EventIDsSortable() {
		t.Fatalf("SortableEventIDs answered %v on ids not sortable yet", on)
	}
	if on := p.apply(&fsm.SortableEventIDs{Now: now}).(bool); on {
		t.Fatal("SortableEventIDs answered true on ids already sortable")
	}
	leased := 0
	for i := range 40 {
		create(fmt.Sprintf("vid_sort_%02d", i))
		if i%7 == 0 && p.apply(&fsm.LeaseTask{NodeID: "node_1", LeaseMS: 60_000, Now: now + int64(time.Millisecond)}).(fsm.LeaseResult).Found {
			leased++ // a processing event, a millisecond after the create
		}
	}
	if leased == 0 {
		t.Fatal("no task was leased: the test logs no processing event")
	}
	// Two videos of one instant.
	p.apply(&fsm.CreateVideo{VideoID: "vid_same_instant_a", AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: now})
	p.apply(&fsm.CreateVideo{VideoID: "vid_same_instant_b", AccountID: "a", Spec: manualSpec("p"), Price: 1, Now: now})
	p.apply(&fsm.FailVideo{VideoID: "vid_sort_39", Reason: "operator", Now: now})
	p.same("checkpoint")

	sortable := func(when string, all []fsm.Event) []fsm.Event {
		t.Helper()
		if got := loggedOf(all[:len(hashed)]); !reflect.DeepEqual(got, hashed) {
			t.Fatalf("%s: the events before the switch are listed as %v, want %v", when, got, hashed)
		}
		var out []fsm.Event
		seen := map[string]bool{}
		for _, e := range all[len(hashed):] {
			if seen[e.ID] {
				t.Fatalf("%s: two events with the id %s", when, e.ID)
			}
			seen[e.ID] = true
			if e.Type != fsm.EventVideoCreated && e.Type != fsm.EventVideoProcessing {
				if e.ID != fsm.EventID(e.Video.ID) {
					t.Fatalf("%s: final event %s of %s, want its webhook id %s", when, e.ID, e.Video.ID, fsm.EventID(e.Video.ID))
				}
				continue
			}
			if len(e.ID) != len(hashed[0].id) || !strings.HasPrefix(e.ID, "evt_") {
				t.Fatalf("%s: event id %q is not shaped as the hashed ones (%q)", when, e.ID, hashed[0].id)
			}
			if n := len(out); n > 0 && out[n-1].Created < e.Created && out[n-1].ID >= e.ID {
				t.Fatalf("%s: event %s (at %d) is later than %s (at %d), but its id does not sort after", when, e.ID, e.Created, out[n-1].ID, out[n-1].Created)
			}
			out = append(out, e)
		}
		return out
	}
	all := p.eventLog("a", nil, 3)
	if got := sortable("from the file", all); len(got) != 40+leased+2 {
		t.Fatalf("%d sortable events, want 42 created and %d processing: %v", len(got), leased, loggedOf(all))
	}

	p.restart()
	if !p.disk.EventIDsSortable() {
		t.Fatal("the switch was lost in a restart")
	}
	create("vid_after_restart")
	p.same("restart")
	if got := sortable("after a restart", p.eventLog("a", nil, 7)); got[len(got)-1].Video.ID != "vid_after_restart" {
		t.Fatalf("the last sortable event is %s of %s", got[len(got)-1].ID, got[len(got)-1].Video.ID)
	}
}

// TestSpecsByReference runs the same videos through two pairs of states,
// one switched to SpecsByReference and one keeping a copy of the spec in
// every event and idempotency record, and checks that both list the same
// events: created, processing, completed (whose duration the rendered file
// changed after the earlier events were logged), failed and canceled, and
// replay the same answers to retried creates, from memory, from the file
// after a checkpoint, and after a restart; and that the switched one's
// snapshot holds the prompt once per video rather than once per event and
// record.
func TestSpecsByReference(t *testing.T) {
	prompt := "a harbour at dawn, " + strings.Repeat("gulls over the water, ", 40)
	seed, neg := int64(7), "blur"
	spec := manualSpec(prompt)
	spec.Seed, spec.NegativePrompt = &seed, &neg
	spec.ImageURLs = []string{"https://example.com/a.png"}
	run := func(byRef bool) *pair {
		p := newPair(t)
		now := t0
		p.apply(&fsm.CreateAccount{AccountID: "a", Name: "a", Plan: fsm.PlanPro, Credits: 1000, KeyID: "k", KeyHash: keyHash("k"), KeyHint: "k", Now: now})
		p.apply(&fsm.RegisterNode{NodeID: "node_1", Name: "n1", CredHash: [32]byte{1}, Node: farmNode(), Now: now})
		if byRef {
			p.refuse(&fsm.SpecsByReference{Now: now}, fsm.ErrInvalidCommand) // kept with the log's state
		}
		p.apply(&fsm.StartEventLog{Now: now})
		p.apply(&fsm.SortableEventIDs{Now: now})
		create := func(v string) {
			t.Helper()
			now += int64(time.Second)
			p.apply(&fsm.CreateVideo{VideoID: v, AccountID: "a", Spec: spec, Price: 1, Now: now,
				IdempotencyKey: "key-" + v, BodyHash: sha256.Sum256([]byte(v))})
		}
		create("vid_copied") // before the switch: its events keep their copies
		if byRef {
			if on := p.apply(&fsm.SpecsByReference{Now: now}).(bool); !on || !p.mem.EventSpecsByReference() || !p.disk.EventSpecsByReference() {
				t.Fatalf("SpecsByReference answered %v on a log keeping copies", on)
			}
			if p.apply(&fsm.SpecsByReference{Now: now}).(bool) {
				t.Fatal("SpecsByReference answered true on a log already by reference")
			}
		}
		for _, v := range []string{"vid_done", "vid_failed", "vid_canceled", "vid_queued"} {
			create(v)
		}
		// vid_copied and vid_done render; the file is 7.4 s, not 5.
		for range 4 {
			now += int64(time.Second)
			res := p.apply(&fsm.LeaseTask{NodeID: "node_1", LeaseMS: 60_000, Now: now}).(fsm.LeaseResult)
			if !res.Found {
				t.Fatalf("no task to lease: %s", res.Why)
			}
			l := res.Lease
			name := l.TaskID[strings.LastIndex(l.TaskID, "/")+1:]
			file := map[string]string{"render": "clip.mp4", "finalize": "video.mp4"}[name]
			p.apply(&fsm.CompleteTask{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, DurationSeconds: 7.4, Now: now,
				Artifacts: map[string]string{file: "videos/" + l.VideoID + "/" + name + "/" + file}})
		}
		p.apply(&fsm.FailVideo{VideoID: "vid_failed", Reason: "operator", Now: now})
		p.apply(&fsm.CancelVideo{VideoID: "vid_canceled", AccountID: "a", Now: now})
		return p
	}
	byRef, copies := run(true), run(false)
	// A retried create answers what the first one did, the spec as asked
	// (not the rendered file's duration), from memory and from the file.
	replays := func(when string) {
		t.Helper()
		for _, v := range []string{"vid_copied", "vid_done", "vid_queued"} {
			c := &fsm.CreateVideo{VideoID: "vid_retry", AccountID: "a", Spec: spec, Price: 1, Now: t0 + int64(time.Hour),
				IdempotencyKey: "key-" + v, BodyHash: sha256.Sum256([]byte(v))}
			got, want := byRef.apply(c).(fsm.CreateVideoResult), copies.apply(c).(fsm.CreateVideoResult)
			if !got.Replayed || !reflect.DeepEqual(got, want) || got.Video.Spec.Prompt != prompt || got.Video.Spec.DurationSeconds != 5 {
				t.Fatalf("%s: the retry of %s answers %+v by reference, %+v with copies", when, v, got, want)
			}
		}
	}
	replays("in memory")
	same := func(when string) {
		t.Helper()
		got, want := byRef.eventLog("a", nil, 4), copies.eventLog("a", nil, 4)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: by reference the log lists\n%+v\nwith copies\n%+v", when, got, want)
		}
		done := 0
		for _, e := range got {
			if e.Video.Spec.Prompt != prompt {
				t.Fatalf("%s: event %s %s has the prompt %q", when, e.Type, e.Video.ID, e.Video.Spec.Prompt)
			}
			if e.Type == fsm.EventVideoCompleted {
				done++
				if e.Video.Spec.DurationSeconds != 7 {
					t.Fatalf("%s: completed event of %s: duration %d, want the file's 7", when, e.Video.ID, e.Video.Spec.DurationSeconds)
				}
			} else if e.Video.Spec.DurationSeconds != 5 {
				t.Fatalf("%s: %s event of %s: duration %d, want the requested 5", when, e.Type, e.Video.ID, e.Video.Spec.DurationSeconds)
			}
		}
		if done != 2 || len(got) != 5+2+2+2 { // created; processing and completed of two; failed; canceled
			t.Fatalf("%s: %d events, %d completed: %v", when, len(got), done, loggedOf(got))
		}
	}
	same("in memory")
	byRef.same("checkpoint")
	copies.same("checkpoint")
	same("from the file")
	replays("from the file")
	if a, b := bytes.Count(snapshotBytes(t, byRef.disk), []byte(prompt)), bytes.Count(snapshotBytes(t, copies.disk), []byte(prompt)); a != 5+2 || b != 5+11+5 {
		// Each video's record, and vid_copied's created event and
		// idempotency record, written before the switch; with copies, every
		// event and idempotency record too.
		t.Fatalf("the prompt is %d times in the snapshot by reference, %d with copies; want 7 and 21", a, b)
	}
	for _, p := range []*pair{byRef, copies} {
		p.restart()
	}
	if !byRef.disk.EventSpecsByReference() {
		t.Fatal("the switch was lost in a restart")
	}
	same("after a restart")
	replays("after a restart")
}
