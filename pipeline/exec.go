package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Command is one invocation of an external program.
type Command struct {
	Name  string    // program name or path, e.g. "ffmpeg"
	Args  []string  // arguments, without the program name
	Dir   string    // working directory; "" is the current one
	Stdin io.Reader // nil means no input
	Env   []string  // extra KEY=value variables on top of the agent's environment (less its VIDFARM_* ones: childEnv)

	// OnStdoutLine, when set, receives stdout line by line as the program
	// writes it (without the line ending); stdout is then not returned.
	OnStdoutLine func(line string)
}

// Executor runs external programs. Every tool the pipeline drives goes
// through one, so unit tests can record and check exact arguments with a
// fake while integration tests use OSExecutor.
//
// Run returns the program's stdout (unless Command.OnStdoutLine consumes
// it). A program that is not installed yields an error wrapping
// ErrToolMissing; a non-zero exit or a killing signal a *ToolError; a
// context that ends first an error wrapping the context's cause (so a
// runner's own timeout says which runner and which limit) that also
// matches ctx.Err() with errors.Is, with the tail of the program's
// stderr (the process group is killed).
type Executor interface {
	Run(ctx context.Context, cmd Command) ([]byte, error)
}

// OSExecutor runs real processes.
//
// The program's end is the end of the run: once it has exited, its output
// pipes get pipeGrace to drain and are then closed, and whatever is left
// of its process group (a child it started in the background, which may
// hold those pipes) is SIGKILLed. A program that leaves a child holding
// its stdout, or is itself killed (SIGKILL by the OOM killer) while its
// children live on, therefore does not hold its task until they end.
type OSExecutor struct{}

var _ Executor = OSExecutor{}

// stderrTailBytes is how much of a program's stderr is kept for errors.
const stderrTailBytes = 4096

// pipeGrace is how long a program's stdout and stderr may stay open after
// it exited (or its context ended) before they are closed: long enough to
// read what it wrote last, short enough that a child it left holding them
// does not hold the task (exec.Cmd.WaitDelay).
const pipeGrace = 2 * time.Second

// Run implements Executor.
func (OSExecutor) Run(ctx context.Context, c Command) ([]byte, error) {
	path, err := exec.LookPath(c.Name)
	if err != nil {
		return nil, missingTool(c.Name)
	}
	cmd := exec.CommandContext(ctx, path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Stdin = c.Stdin
	cmd.Env = childEnv(os.Environ(), c.Env)
	killGroupOnCancel(cmd)
	cmd.WaitDelay = pipeGrace

	stderr := &tailBuffer{max: stderrTailBytes}
	cmd.Stderr = stderr
	var stdout bytes.Buffer
	var lines *lineWriter
	if c.OnStdoutLine == nil {
		cmd.Stdout = &stdout
	} else {
		// A writer, not StdoutPipe: exec then owns the copy, and WaitDelay
		// bounds it once the program has exited. Waiting for EOF on a pipe
		// instead waits for every process that inherited it.
		lines = &lineWriter{fn: c.OnStdoutLine}
		cmd.Stdout = lines
	}
	if err := start(cmd); err != nil {
		return nil, fmt.Errorf("%s: start: %w", c.Name, err)
	}
	err = cmd.Wait()
	killLeftovers(cmd)
	if lines != nil {
		lines.flush() // Wait has returned: exec's copy is done
	}
	if ctx.Err() != nil {
		name := filepath.Base(c.Name)
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			return nil, fmt.Errorf("%s: %w; its stderr ended: %s", name, stoppedBy(ctx), tail)
		}
		return nil, fmt.Errorf("%s: %w", name, stoppedBy(ctx))
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// It exited 0; a child it left held its output past pipeGrace.
		err = nil
	}
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, &ToolError{Tool: c.Name, Args: c.Args, ExitCode: exitErr.ExitCode(),
				Signal: killedBy(exitErr.ProcessState), Stderr: stderr.String()}
		}
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return stdout.Bytes(), nil
}

// childEnv is the environment of a program the pipeline starts: the
// agent's own, less its VIDFARM_* settings, then extra (kept whole, even
// a VIDFARM_ one: the caller chose it). The agent's settings hold its
// secrets (VIDFARM_TOKEN, the agent token) and are none of a runner's
// business; a runner's stderr can end up in a failed video's error
// message, which the customer reads.
func childEnv(environ, extra []string) []string {
	out := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "VIDFARM_") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// missingTool builds the ErrToolMissing error for a program.
func missingTool(name string) error {
	return fmt.Errorf("%w: %q not found on PATH; install ffmpeg (which provides ffprobe) and espeak-ng, "+
		"e.g. `apt-get install ffmpeg espeak-ng` on Debian/Ubuntu, or set the path in pipeline.Tools", ErrToolMissing, name)
}

// lineWriter is an io.Writer that calls fn for each line written, without
// its line ending. Lines of any length are delivered; \r (progress bars)
// ends a line as \n does, and empty lines are skipped. flush delivers an
// unterminated last line.
type lineWriter struct {
	fn  func(string)
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' || b == '\r' {
			l.flush()
			continue
		}
		l.buf = append(l.buf, b)
	}
	return len(p), nil
}

func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.fn(string(l.buf))
		l.buf = l.buf[:0]
	}
}

// tailBuffer is an io.Writer that keeps only the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
