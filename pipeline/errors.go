package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrToolMissing means an external program a stage needs (ffmpeg, ffprobe or
// espeak-ng) is not installed or not on PATH. The wrapped message names the
// program and the packages that provide it.
var ErrToolMissing = errors.New("pipeline: required tool is not installed")

// ErrToolFailed means an external program ran and exited with a non-zero
// status. The error in the chain is a *ToolError carrying the exit code and
// the tail of the program's stderr.
var ErrToolFailed = errors.New("pipeline: external tool failed")

// ErrInvalidRequest means a stage was given input it cannot work with: an
// empty prompt, a duration out of range, an unknown resolution, aspect ratio,
// orientation or operation, the wrong number of input images, a malformed
// colour. The wrapped message says which field and what is allowed.
var ErrInvalidRequest = errors.New("pipeline: invalid request")

// ErrUnknownVoice means a voice id is not one of the ids ListVoices returns.
var ErrUnknownVoice = errors.New("pipeline: unknown voice")

// ErrUnknownAvatar means an avatar id is not one of StockAvatars.
var ErrUnknownAvatar = errors.New("pipeline: unknown stock avatar")

// ErrNoOutput means a tool or runner exited successfully but did not leave
// the file it was asked to write (or left an empty one).
var ErrNoOutput = errors.New("pipeline: tool produced no output file")

// ToolError describes an external program that exited with a non-zero
// status or was killed by a signal. It unwraps to ErrToolFailed.
type ToolError struct {
	Tool     string   // program as invoked, e.g. "ffmpeg"
	Args     []string // arguments, without the program
	ExitCode int      // -1 when the process was killed by a signal
	Signal   string   // the signal that killed it, e.g. "SIGKILL"; "" when it exited
	Stderr   string   // last few KB of stderr
}

func (e *ToolError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = "(no stderr)"
	}
	// The program's base name only: this text can reach API clients in a failed
	// video's error message, and the node's paths are none of their business.
	name := filepath.Base(e.Tool)
	switch {
	case e.Signal == "SIGKILL":
		// Nothing in the pipeline sends it but a cancelled context, which
		// is reported apart; the kernel's OOM killer is the usual sender.
		return fmt.Sprintf("%s was killed by signal SIGKILL (out of memory?): %s", name, msg)
	case e.Signal != "":
		return fmt.Sprintf("%s was killed by signal %s: %s", name, e.Signal, msg)
	}
	return fmt.Sprintf("%s exited with status %d: %s", name, e.ExitCode, msg)
}

// Unwrap makes errors.Is(err, ErrToolFailed) true.
func (e *ToolError) Unwrap() error { return ErrToolFailed }

// stoppedBy is the error of work that ctx, now done, stopped: it reads as
// the context's cause (a runner's timeout names the runner and its limit,
// where ctx.Err() would only say "context deadline exceeded") and matches
// both the cause and ctx.Err() (context.Canceled, DeadlineExceeded) with
// errors.Is.
func stoppedBy(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return err
	}
	return &stoppedError{cause: cause, ctxErr: err}
}

// stoppedError is a context's cause that also unwraps to its Err.
type stoppedError struct{ cause, ctxErr error }

func (e *stoppedError) Error() string   { return e.cause.Error() }
func (e *stoppedError) Unwrap() []error { return []error{e.cause, e.ctxErr} }

// invalidf wraps ErrInvalidRequest with a formatted explanation.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}
