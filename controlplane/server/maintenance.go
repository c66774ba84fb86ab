package server

import (
	"context"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// handBackDrained enforces drain deadlines: once a draining node's deadline
// has passed, the tasks it still runs go back to the queue (HandBackDrained)
// without counting a failure, and the node's agent learns at its next
// heartbeat that those leases are stale. It proposes only when the FSM
// says a hand-back is due, so an idle farm writes nothing to the log. The
// deadline is in the replicated state, so a new leader enforces it too.
func (s *Server) handBackDrained(ctx context.Context) {
	now := time.Now().UnixNano()
	if !s.Node.FSM.HandBackDue(now) {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := fsm.Do(actx, s.Node, &fsm.HandBackDrained{Now: now})
	if err != nil {
		if !s.gated("hand back drained", err) && ctx.Err() == nil {
			s.log.Warn("hand back the tasks of drained nodes", "err", err)
		}
		return
	}
	for _, l := range res.Leases {
		s.log.Info("drain deadline passed: task handed back to the queue", "node_id", l.NodeID, "task_id", l.TaskID,
			"video_id", l.VideoID, "token", l.Token)
	}
	if len(res.Leases) > 0 {
		s.notify.Notify()
	}
}
