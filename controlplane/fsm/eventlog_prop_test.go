package fsm_test

import (
	"reflect"

	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// eventLogCommand switches the event log on, makes its ids sortable by
// time, or trims it by a retention of up to two days (the generator's clock
// jumps by up to 13 h), a few events at a time.
func (g *cmdGen) eventLogCommand(t *rapid.T) fsm.Command {
	if !g.logOn || rapid.IntRange(0, 9).Draw(t, "start_again") == 0 {
		g.logOn = true
		return &fsm.StartEventLog{Now: g.now}
	}
	if rapid.IntRange(0, 4).Draw(t, "sortable_ids") == 0 {
		return &fsm.SortableEventIDs{Now: g.now}
	}
	return &fsm.TrimEventLog{Before: g.now - rapid.Int64Range(0, 2*24*3600*1e9).Draw(t, "log_retention"),
		Limit: rapid.IntRange(0, 5).Draw(t, "trim_limit")}
}

// sameEventLogs pages through every account's event log, two events at a
// time, unfiltered, by each type and by two types, comparing every page.
func sameEventLogs(t *rapid.T, g *cmdGen, a, b *fsm.FSM) {
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
				if errx != nil || !x.HasMore {
					break
				}
				q.After = x.Events[len(x.Events)-1].ID
			}
		}
	}
	if a.EventLogOn() != b.EventLogOn() || a.EventIDsSortable() != b.EventIDsSortable() {
		t.Fatal("one FSM records events (or makes their ids sortable), the other does not")
	}
}
