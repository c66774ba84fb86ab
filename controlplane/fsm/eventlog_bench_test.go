package fsm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// BenchmarkEventLogPage reads a page of 100 events of an account whose log
// holds 2×VIDFARM_BENCH_VIDEOS events (default 50,000 videos, each created
// and failed) in a state file, from the start, from the middle, and of one
// type from the middle: each is a range scan of an index from the cursor,
// so the cost is the page, not the log. Filling goes through the real
// commands and checkpoints, which also give the state file's bytes per
// event. It runs with the created events logged, and derived from their
// videos (DerivedCreatedEvents), where trimmed_half reads the first page
// after a trim hid the older half of them (the search by halves).
func BenchmarkEventLogPage(b *testing.B) {
	for _, derive := range []bool{false, true} {
		b.Run(map[bool]string{false: "logged", true: "derived"}[derive], func(b *testing.B) { benchEventLogPage(b, derive) })
	}
}

func benchEventLogPage(b *testing.B, derive bool) {
	n := envInt("VIDFARM_BENCH_VIDEOS", 50_000)
	f, must := benchStore(b)
	must(&fsm.StartEventLog{Now: t0})
	if derive {
		must(&fsm.DerivedCreatedEvents{Now: t0})
	}
	before := f.TierStats().StoreBytes
	start := time.Now()
	for i := range n {
		id := fmt.Sprintf("vid_%08d", i)
		must(&fsm.CreateVideo{VideoID: id, AccountID: "a", Spec: autoSpec("a product tour of a solar lantern", 15), Price: 1, Now: t0 + int64(i)})
		must(&fsm.FailVideo{VideoID: id, Reason: "operator", Now: t0 + int64(i)})
		if i%8192 == 8191 {
			checkpoint(b, f)
		}
	}
	checkpoint(b, f)
	ts, st := f.TierStats(), f.Stats()
	b.Logf("%d videos and %d logged events filled and checkpointed in %s: %d in memory, state file +%d MB (%d bytes a video)", n, st.LoggedEvents,
		time.Since(start).Round(time.Millisecond), ts.TableMemory["event_log"], (ts.StoreBytes-before)>>20, (ts.StoreBytes-before)/int64(n))
	deep, err := f.Events(fsm.EventQuery{AccountID: "a", Limit: n})
	if err != nil {
		b.Fatal(err)
	}
	cursor := deep.Events[len(deep.Events)-1].ID
	cases := []struct {
		name string
		q    fsm.EventQuery
		trim bool
	}{
		{"oldest", fsm.EventQuery{AccountID: "a", Limit: 100}, false},
		{"middle", fsm.EventQuery{AccountID: "a", Limit: 100, After: cursor}, false},
		{"type", fsm.EventQuery{AccountID: "a", Limit: 100, After: cursor, Types: []string{fsm.EventVideoFailed}}, false},
		{"two_types", fsm.EventQuery{AccountID: "a", Limit: 100, After: cursor, Types: []string{fsm.EventVideoFailed, fsm.EventVideoCanceled}}, false},
		{"created", fsm.EventQuery{AccountID: "a", Limit: 100, After: cursor, Types: []string{fsm.EventVideoCreated}}, false},
	}
	if derive {
		cases = append(cases, struct {
			name string
			q    fsm.EventQuery
			trim bool
		}{"trimmed_half", fsm.EventQuery{AccountID: "a", Limit: 100}, true})
	}
	for _, bc := range cases {
		if bc.trim {
			must(&fsm.TrimEventLog{Before: t0 + int64(n/2), Limit: 1})
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := f.Events(bc.q)
				if err != nil || len(page.Events) != 100 {
					b.Fatalf("%d events, %v", len(page.Events), err)
				}
			}
		})
	}
}
