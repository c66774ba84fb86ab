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
// recorded, on any replica.
func (s *Server) startEventLog(ctx context.Context, level fsm.MessageType) {
	s.switchOn(ctx, level, &fsm.StartEventLog{Now: time.Now().UnixNano()}, s.Node.FSM.EventLogOn,
		"event log started: every account's events are recorded from now on")
}

// sortableEventIDs gives new created and processing events ids in log
// order (fsm.SortableEventIDs) once the event log is on and every member
// understands the command; until then they keep ids hashed from their
// video's.
func (s *Server) sortableEventIDs(ctx context.Context, level fsm.MessageType) {
	s.switchLogOn(ctx, level, &fsm.SortableEventIDs{Now: time.Now().UnixNano()}, s.Node.FSM.EventIDsSortable,
		"sortable event ids: new video.created and video.processing events get ids that sort by their time")
}

// specsByReference makes the log's events and the idempotency records keep
// a video without its spec (fsm.SpecsByReference) once the log is on and
// every member understands the command; until then each keeps a copy.
func (s *Server) specsByReference(ctx context.Context, level fsm.MessageType) {
	s.switchLogOn(ctx, level, &fsm.SpecsByReference{Now: time.Now().UnixNano()}, s.Node.FSM.EventSpecsByReference,
		"specs by reference: new events and idempotency records keep a video without its spec, which is read from the video")
}

// deriveCreatedEvents stops logging video.created events, which are then
// derived from their videos' records (fsm.DerivedCreatedEvents), once the
// log is on and every member understands the command.
func (s *Server) deriveCreatedEvents(ctx context.Context, level fsm.MessageType) {
	s.switchLogOn(ctx, level, &fsm.DerivedCreatedEvents{Now: time.Now().UnixNano()}, s.Node.FSM.CreatedEventsDerived,
		"derived created events: new videos' video.created events are read from their records, not logged")
}

// switchLogOn is switchOn for a switch kept with the event log's state,
// which the FSM refuses while the log is off: it waits for the log too.
func (s *Server) switchLogOn(ctx context.Context, level fsm.MessageType, cmd fsm.Command, on func() bool, started string) {
	logOn := s.Node.FSM.EventLogOn
	s.switchOn(ctx, level, cmd, func() bool { return !logOn() || on() }, started)
}

// startRouting switches routing by voice and stage runner on
// (fsm/routing.go) once every member understands StartRouting; until then
// tts tasks go to any node with espeak-ng, and plans and composites
// anywhere, as before.
func (s *Server) startRouting(ctx context.Context, level fsm.MessageType) {
	s.switchOn(ctx, level, &fsm.StartRouting{Now: time.Now().UnixNano()}, s.Node.FSM.RoutingOn,
		"routing started: tts tasks go only to nodes that offer their voice, plans and composites to nodes with their stage runner")
}

// activeWebhookLimit makes the per-account endpoint limit count enabled
// endpoints only (fsm.ActiveWebhookLimit) once every member understands it.
func (s *Server) activeWebhookLimit(ctx context.Context, level fsm.MessageType) {
	s.switchOn(ctx, level, &fsm.ActiveWebhookLimit{Now: time.Now().UnixNano()}, s.Node.FSM.ActiveWebhookLimitOn,
		"webhook limit counts active endpoints: a disabled endpoint no longer blocks registering another")
}

// nextInLine makes a video first in line say next_in_line rather than
// that the nodes are busy with work ahead of it (fsm.NextInLine) once every
// member understands it.
func (s *Server) nextInLine(ctx context.Context, level fsm.MessageType) {
	s.switchOn(ctx, level, &fsm.NextInLine{Now: time.Now().UnixNano()}, s.Node.FSM.NextInLineOn,
		"wait reason next_in_line: a video first in line no longer says the nodes are busy with work ahead of it")
}

// switchOn proposes cmd, which switches something on for good, once every
// member understands it. It proposes nothing once on reports it on, and
// waits for the cluster's level rather than be refused by the gate every
// second of a rolling upgrade.
func (s *Server) switchOn(ctx context.Context, level fsm.MessageType, cmd fsm.Command, on func() bool, started string) {
	if level < cmd.Type() || on() {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Node.Apply(actx, cmd); err != nil {
		if ctx.Err() == nil && !s.gated(cmd.Type().String(), err) {
			s.log.Warn("switch on", "command", cmd.Type().String(), "err", err)
		}
		return
	}
	s.log.Info(started)
}

// trimEventLog forgets events older than fsm.EventLogRetention, a batch at
// a time; it proposes only when there are some, or when the derived created
// events' kept time is more than a minute behind (fsm.EventLogTrimDue).
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
	if n > 0 { // with derived created events a trim that forgets none comes every minute
		s.log.Info("trimmed the event log", "count", n, "older_than", fsm.EventLogRetention.String())
	}
}
