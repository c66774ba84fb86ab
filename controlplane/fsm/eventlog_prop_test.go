package fsm_test

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// eventLogCommand switches the event log on, makes its ids sortable by
// time, logs its videos' specs by reference, derives its created events
// from their videos, or trims it by a retention of
// up to two days (the generator's clock jumps by up to 13 h), a few events
// at a time.
func (g *cmdGen) eventLogCommand(t *rapid.T) fsm.Command {
	if !g.logOn || rapid.IntRange(0, 9).Draw(t, "start_again") == 0 {
		g.logOn = true
		return &fsm.StartEventLog{Now: g.now}
	}
	if rapid.IntRange(0, 4).Draw(t, "sortable_ids") == 0 {
		return &fsm.SortableEventIDs{Now: g.now}
	}
	if rapid.IntRange(0, 4).Draw(t, "specs_by_reference") == 0 {
		return &fsm.SpecsByReference{Now: g.now}
	}
	if rapid.IntRange(0, 4).Draw(t, "derived_created_events") == 0 {
		return &fsm.DerivedCreatedEvents{Now: g.now}
	}
	return &fsm.TrimEventLog{Before: g.now - rapid.Int64Range(0, 2*24*3600*1e9).Draw(t, "log_retention"),
		Limit: rapid.IntRange(0, 5).Draw(t, "trim_limit")}
}

// sameEventLogs pages through every account's event log, two events at a
// time, unfiltered, by each type and by two types, comparing every page.
func sameEventLogs(t *rapid.T, g *cmdGen, a, b *fsm.FSM) {
	sameEventPages(t, g, a, b, func(fsm.Event) {})
	if a.EventLogOn() != b.EventLogOn() || a.EventIDsSortable() != b.EventIDsSortable() || a.EventSpecsByReference() != b.EventSpecsByReference() ||
		a.CreatedEventsDerived() != b.CreatedEventsDerived() {
		t.Fatal("one FSM records events (or makes their ids sortable, logs specs by reference or derives created events), the other does not")
	}
}

// sameEventPages is sameEventLogs' paging, handing seen every event listed.
func sameEventPages(t *rapid.T, g *cmdGen, a, b *fsm.FSM, seen func(fsm.Event)) {
	filters := [][]string{nil, {fsm.EventVideoCompleted, fsm.EventVideoFailed}}
	for _, typ := range fsm.LogEventTypes {
		filters = append(filters, []string{typ})
	}
	for _, id := range append(g.accounts, "missing_acct") {
		for _, types := range filters {
			q := fsm.EventQuery{AccountID: id, Types: types, Limit: 2}
			for range 200 {
				x, errx := a.Events(q)
				y, erry := b.Events(q)
				if !reflect.DeepEqual(answerOf(x, errx), answerOf(y, erry)) {
					t.Fatalf("event log of %s %+v differs:\n%#v\n%#v", id, q, x, y)
				}
				for _, e := range x.Events {
					seen(e)
				}
				if errx != nil || !x.HasMore {
					break
				}
				q.After = x.Events[len(x.Events)-1].ID
			}
		}
	}
}

// TestSpecsByReferenceListsAsCopies runs random logs through two FSMs, one
// of them never applying SpecsByReference, and checks that both list every
// account's event log alike: whatever a command does to a video after its
// events were logged, the spec read from its record is the one its events
// would have copied. The one by reference has a state file and checkpoints,
// so that specs are read from videos in memory and on disk.
func TestSpecsByReferenceListsAsCopies(t *testing.T) {
	var completed int // runs that listed a completed event by reference
	defer func() {
		t.Logf("runs that listed a completed video's event by reference: %d", completed)
		if !t.Failed() && completed == 0 {
			t.Error("no run listed a completed video's event by reference: the test misses what changes a spec")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		g := newCmdGen()
		g.farm = rapid.Bool().Draw(rt, "farm")
		byRef, copies := openStore(rt, tempStorePath(rt)), fsm.New()
		defer byRef.Close()
		apply := applyToBoth(rt, g, byRef, copies, fsm.SpecsByReferenceType, func(_ fsm.Command, a, b answer) bool { return reflect.DeepEqual(a, b) })
		// The log is on from the start, and a node that renders anything
		// is there; the switch comes at some step.
		g.logOn = true
		apply(&fsm.StartEventLog{Now: g.now})
		apply(&fsm.RegisterNode{NodeID: "node_all", Name: "all", CredHash: keyHash("all"), Node: farmNode(), Now: g.now})
		switchAt := rapid.IntRange(0, 50).Draw(rt, "switch_at")
		for step := range rapid.IntRange(1, 200).Draw(rt, "n") {
			switch {
			case step == switchAt:
				apply(&fsm.SpecsByReference{Now: g.now})
			case rapid.IntRange(0, 19).Draw(rt, "checkpoint") == 0:
				snapshotBytes(t, byRef)
			case len(g.accounts) > 0 && rapid.IntRange(0, 5).Draw(rt, "manual") == 0:
				// A manual video with the spec's rarer fields, which a copy
				// clones.
				id, acct := g.id("vid"), rapid.SampledFrom(g.accounts).Draw(rt, "manual_acct")
				g.videos = append(g.videos, id)
				g.videoAcct[id] = acct
				spec := manualSpec("p" + id)
				if rapid.Bool().Draw(rt, "rare_fields") {
					seed, neg := rapid.Int64().Draw(rt, "seed"), "n"+id
					spec.Seed, spec.NegativePrompt, spec.ImageURLs = &seed, &neg, []string{"https://example.com/" + id}
				}
				apply(&fsm.CreateVideo{VideoID: id, AccountID: acct, Spec: spec, Price: 1, Now: g.now})
			case rapid.IntRange(0, 3).Draw(rt, "render") == 0:
				renderLeased(rt, g, apply)
			default:
				apply(g.next(rt))
			}
		}
		sawCompleted := false
		sameEventPages(rt, g, byRef, copies, func(e fsm.Event) {
			sawCompleted = sawCompleted || (e.Type == fsm.EventVideoCompleted && byRef.EventSpecsByReference())
		})
		if sawCompleted {
			completed++
		}
	})
}

// applyToBoth returns a function that applies a command to both FSMs, the
// first with a state file, and fails the run when same says their answers
// differ; a command of type only goes to the first. It answers the
// first's answer.
func applyToBoth(rt *rapid.T, g *cmdGen, first, second *fsm.FSM, only fsm.MessageType, same func(c fsm.Command, a, b answer) bool) func(fsm.Command) answer {
	var index uint64
	return func(c fsm.Command) answer {
		data, err := fsm.Encode(c)
		if err != nil {
			rt.Fatal(err)
		}
		index++
		a := logged(rt, first, index, data)
		if c.Type() == only {
			return a
		}
		b := logged(rt, second, index, data)
		if !same(c, a, b) {
			rt.Fatalf("%s answered differently:\n%#v\n%#v", c.Type(), a, b)
		}
		g.learn(second, b)
		return a
	}
}

// renderLeased has node_all render what it leases, to a file whose length
// is not the one asked for.
func renderLeased(rt *rapid.T, g *cmdGen, apply func(fsm.Command) answer) {
	res, ok := apply(&fsm.LeaseTask{NodeID: "node_all", LeaseMS: 60_000, Now: g.now}).V.(fsm.LeaseResult)
	if !ok || !res.Found {
		return
	}
	l := res.Lease
	arts := map[string]string{}
	for _, f := range []string{"video.mp4", "clip.mp4", "script.json", "voice.wav", "scene.mp4"} {
		arts[f] = "videos/" + l.VideoID + "/" + g.tasks[l.TaskID] + "/" + f
	}
	apply(&fsm.CompleteTask{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Artifacts: arts,
		Scenes: rapid.IntRange(1, 2).Draw(rt, "scenes"), DurationSeconds: rapid.Float64Range(0, 20).Draw(rt, "secs"), Now: g.now})
}
