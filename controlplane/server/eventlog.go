package server

import (
	"context"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// eventLogTrimBatch bounds one TrimEventLog: its deletions wait in memory
// until the next checkpoint writes them, so a backlog (a leader that was
// down for days) is trimmed a batch a minute rather than in one entry.
const eventLogTrimBatch = 10_000

// startEventLog switches the account event log on (fsm/eventlog.go) once
// every member understands StartEventLog; until then events are not
// recorded, on any replica. It proposes nothing once the log is on, and
// waits for the cluster's level rather than be refused by the gate every
// second of a rolling upgrade.
func (s *Server) startEventLog(ctx context.Context, level fsm.MessageType) {
	if level < fsm.StartEventLogType || s.Node.FSM.EventLogOn() {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := fsm.Do(actx, s.Node, &fsm.StartEventLog{Now: time.Now().UnixNano()}); err != nil {
		if ctx.Err() == nil && !s.gated("start_event_log", err) {
			s.log.Warn("start the event log", "err", err)
		}
		return
	}
	s.log.Info("event log started: every account's events are recorded from now on")
}

// trimEventLog forgets events older than fsm.EventLogRetention, a batch at
// a time; it proposes only when there are some.
func (s *Server) trimEventLog(ctx context.Context) {
	before := time.Now().Add(-fsm.EventLogRetention).UnixNano()
	if !s.Node.FSM.EventLogTrimDue(before) {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := fsm.Do(actx, s.Node, &fsm.TrimEventLog{Before: before, Limit: eventLogTrimBatch})
	if err != nil {
		if ctx.Err() == nil && !s.gated("trim_event_log", err) {
			s.log.Warn("trim the event log", "err", err)
		}
		return
	}
	s.log.Info("trimmed the event log", "count", n, "older_than", fsm.EventLogRetention.String())
}
