package pipeline

import (
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
// status. It unwraps to ErrToolFailed.
type ToolError struct {
	Tool     string   // program as invoked, e.g. "ffmpeg"
	Args     []string // arguments, without the program
	ExitCode int      // -1 when the process was killed by a signal
	Stderr   string   // last few KB of stderr
}

func (e *ToolError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = "(no stderr)"
	}
	// The program's base name only: this text can reach API clients in a failed
	// video's error message, and the node's paths are none of their business.
	return fmt.Sprintf("%s exited with status %d: %s", filepath.Base(e.Tool), e.ExitCode, msg)
}

// Unwrap makes errors.Is(err, ErrToolFailed) true.
func (e *ToolError) Unwrap() error { return ErrToolFailed }

// invalidf wraps ErrInvalidRequest with a formatted explanation.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}
