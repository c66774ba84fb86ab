package fsm

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnexpectedAnswer means a command's answer was not of the type its
// payload declares (Typed): an Applier that is not the FSM's, or a bug.
var ErrUnexpectedAnswer = errors.New("fsm: unexpected answer")

// Applier proposes a command and returns the FSM's answer, or its refusal as
// the error. raftnode.Node is one; the API, admin, agent and webhook servers
// each take one.
type Applier interface {
	Apply(ctx context.Context, cmd Command) (any, error)
}

// Do applies cmd through a and returns its answer as the type the payload
// declares. On an error the answer is the zero R. It is the one place an
// answer's type is asserted.
func Do[R any](ctx context.Context, a Applier, cmd Typed[R]) (R, error) {
	out, err := a.Apply(ctx, cmd)
	return answer[R](cmd, out, err)
}

// ApplyTyped is FSM.ApplyCommand with the answer's type: for the simulator
// and for tests of the state rules.
func ApplyTyped[R any](f *FSM, cmd Typed[R]) (R, error) {
	out, err := f.ApplyCommand(cmd)
	return answer[R](cmd, out, err)
}

func answer[R any](cmd Command, out any, err error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	r, ok := out.(R)
	if !ok {
		return zero, fmt.Errorf("%s answered %T, want %T: %w", cmd.Type(), out, zero, ErrUnexpectedAnswer)
	}
	return r, nil
}
