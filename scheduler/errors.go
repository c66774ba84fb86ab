package scheduler

import "errors"

// Sentinel errors. Every error a State method returns wraps exactly one of
// these with %w and a human-readable detail, so callers branch with
// errors.Is and never on the message text.
var (
	// ErrStaleLease is returned when a report (progress, renewal, completion,
	// failure) comes from anyone but the current holder of the task's lease:
	// a different node, an older fencing token, or a lease that no longer
	// exists because it expired, was revoked or the task already finished.
	// The agent must stop working on the task and discard its output.
	ErrStaleLease = errors.New("scheduler: stale lease")

	// ErrNoWork is returned by Place when the node may not or cannot take any
	// ready task right now (nothing ready fits its free capacity, or it is
	// draining). It is an answer, not a fault: the agent polls again later.
	ErrNoWork = errors.New("scheduler: no work for node")

	// ErrUnknownNode is returned for a node id that was never registered
	// with UpsertNode or has been removed.
	ErrUnknownNode = errors.New("scheduler: unknown node")

	// ErrUnknownVideo is returned for a video id the state does not hold.
	ErrUnknownVideo = errors.New("scheduler: unknown video")

	// ErrUnknownTask is returned for a task id the state does not hold.
	ErrUnknownTask = errors.New("scheduler: unknown task")

	// ErrDuplicate is returned when submitting a video whose id is already
	// held by the state.
	ErrDuplicate = errors.New("scheduler: duplicate id")

	// ErrInvalid is returned for malformed input: a bad graph, requirement,
	// node description, lease duration, percent or snapshot.
	ErrInvalid = errors.New("scheduler: invalid input")

	// ErrWrongState is returned when an operation is not allowed in the
	// video's current state: adding scenes twice or before plan is done,
	// cancelling a finished video, forgetting an unfinished one.
	ErrWrongState = errors.New("scheduler: operation not allowed in current state")
)
