package fsm

import (
	"fmt"

	"github.com/vidfarm/vidfarm/scheduler"
)

// FailTaskPermanently is FailTask from a node that found the video's own
// input unusable (an input image whose address answers 404, or whose
// server's certificate is for another name): every retry would fail the
// same way, so the task and its video fail now and the video is refunded,
// where a FailTask is retried (up to six times, minutes with the backoff).
// A new type rather than a field of FailTask, so a member of an older
// release never applies it as a retryable failure: the agent API proposes
// it once every member understands it, and FailTask before.
type FailTaskPermanently struct {
	NodeID string `msgpack:"node"`
	TaskID string `msgpack:"task"`
	Token  uint64 `msgpack:"token"`
	Reason string `msgpack:"reason"`
	Now    int64  `msgpack:"now"`
}

// Type implements Command.
func (FailTaskPermanently) Type() MessageType { return FailTaskPermanentlyType }

func (s *state) applyFailTaskPermanently(c *FailTaskPermanently) (scheduler.Outcome, error) {
	ref := scheduler.LeaseRef{TaskID: c.TaskID, NodeID: c.NodeID, Token: c.Token}
	out, err := s.sched.FailPermanently(ref, c.Reason, timeOf(c.Now))
	if err != nil {
		return scheduler.Outcome{}, fmt.Errorf("fail %s permanently: %w", c.TaskID, err)
	}
	s.afterOutcome(out, c.Now)
	return out, nil
}
