package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

func unauthorized(msg string) *apierr.Error {
	return apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, msg)
}

func staleLease(msg string) *apierr.Error {
	return apierr.New(http.StatusConflict, wire.CodeStaleLease, msg+"; drop the task and do not retry this report")
}

// unknownTask is the answer about a task the scheduler does not hold. The
// scheduler forgets a video's (or media job's) tasks when it ends, so a node
// still running one of them learns here that its video was canceled, failed
// or completed, the commonest case being an owner's cancel mid-render: its
// lease is as dead as an expired one, and it must stop the run and drop the
// result, not log an error, so that is a stale lease. A task of no video or
// job, or a name that is not in a running video's graph, is not found.
func (s *server) unknownTask(taskID string) *apierr.Error {
	if s.fsm.TaskEnded(taskID) {
		return staleLease("task " + taskID + " is no longer queued or leased: its video or job ended (canceled, failed or completed)")
	}
	return apierr.NotFound("task " + taskID)
}

func invalid(msg string) *apierr.Error {
	return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, msg)
}

// apply proposes cmd and returns the FSM's answer. The node bounds how long
// the proposal waits (raftnode.DefaultApplyTimeout): no timer per call.
func apply[R any](s *server, r *http.Request, cmd fsm.Typed[R]) (R, error) {
	return fsm.Do(r.Context(), s.cfg.Store, cmd)
}

// fromApply turns what a proposal or its apply returned into the protocol's error.
func (s *server) fromApply(r *http.Request, err error) *apierr.Error {
	switch {
	case errors.Is(err, scheduler.ErrStaleLease):
		return staleLease("this node no longer holds that lease (it expired, was handed to another node, or its video ended)")
	case errors.Is(err, scheduler.ErrUnknownNode):
		return unauthorized("this node is not registered (it was deregistered or replaced); register again")
	case errors.Is(err, scheduler.ErrUnknownTask):
		return s.unknownTask(info(r).taskID)
	case errors.Is(err, scheduler.ErrInvalid), errors.Is(err, fsm.ErrInvalidCommand):
		return invalid(err.Error())
	case errors.Is(err, raftnode.ErrNotUnderstood):
		// A command some control-plane member cannot apply until it is
		// upgraded: nothing was written, the agent retries.
		s.log.Warn("agent request refused: a cluster member does not understand its command yet",
			"request_id", apierr.RequestID(r.Context()), "node_id", info(r).nodeID, "err", err)
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError,
			"the control plane is being upgraded and cannot take this report until it completes; retry with exponential backoff").
			With("reason", "cluster_upgrade_in_progress")
		e.RetryAfter = 30
		return e
	case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, raftnode.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError,
			"the control plane is electing a leader or overloaded; retry with exponential backoff")
		e.RetryAfter = 1
		return e
	}
	s.log.Error("agent apply failed", "request_id", apierr.RequestID(r.Context()),
		"node_id", info(r).nodeID, "task_id", info(r).taskID, "err", err)
	return apierr.Internal()
}

// decode reads a JSON body into v. An empty body leaves v as it is when
// emptyOK; unknown fields are ignored so newer agents can talk to older servers.
func decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) *apierr.Error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
				fmt.Sprintf("request body must be at most %d bytes", maxJSONBytes))
		}
		return invalid("could not read request body: " + err.Error())
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if emptyOK {
			return nil
		}
		return invalid("a JSON body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return invalid("invalid JSON body: " + err.Error())
	}
	if dec.More() {
		return invalid("invalid JSON body: data after the object")
	}
	return nil
}
