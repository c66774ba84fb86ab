package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	Env   []string  // extra KEY=value variables on top of the agent's environment

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
// ErrToolMissing; a non-zero exit a *ToolError; a cancelled context the
// context's error (the process group is killed).
type Executor interface {
	Run(ctx context.Context, cmd Command) ([]byte, error)
}

// OSExecutor runs real processes.
type OSExecutor struct{}

var _ Executor = OSExecutor{}

// stderrTailBytes is how much of a program's stderr is kept for errors.
const stderrTailBytes = 4096

// Run implements Executor.
func (OSExecutor) Run(ctx context.Context, c Command) ([]byte, error) {
	path, err := exec.LookPath(c.Name)
	if err != nil {
		return nil, missingTool(c.Name)
	}
	cmd := exec.CommandContext(ctx, path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Stdin = c.Stdin
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	killGroupOnCancel(cmd)
	cmd.WaitDelay = 2 * time.Second

	stderr := &tailBuffer{max: stderrTailBytes}
	cmd.Stderr = stderr
	var stdout bytes.Buffer
	var scanDone chan struct{}
	if c.OnStdoutLine == nil {
		cmd.Stdout = &stdout
	} else {
		pr, err := cmd.StdoutPipe()
		if err != nil {
			return nil, fmt.Errorf("%s: stdout pipe: %w", c.Name, err)
		}
		scanDone = make(chan struct{})
		go func() {
			defer close(scanDone)
			readLines(pr, c.OnStdoutLine)
		}()
	}
	if err := start(cmd); err != nil {
		return nil, fmt.Errorf("%s: start: %w", c.Name, err)
	}
	if scanDone != nil {
		<-scanDone // all of stdout read before Wait closes the pipe
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, ctx.Err())
	}
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, &ToolError{Tool: c.Name, Args: c.Args, ExitCode: exitErr.ExitCode(), Stderr: stderr.String()}
		}
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return stdout.Bytes(), nil
}

// missingTool builds the ErrToolMissing error for a program.
func missingTool(name string) error {
	return fmt.Errorf("%w: %q not found on PATH; install ffmpeg (which provides ffprobe) and espeak-ng, "+
		"e.g. `apt-get install ffmpeg espeak-ng` on Debian/Ubuntu, or set the path in pipeline.Tools", ErrToolMissing, name)
}

// readLines calls fn for each line of r until EOF. Lines of any length are
// delivered; \r line endings (progress bars) also end a line.
func readLines(r io.Reader, fn func(string)) {
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		line, err := br.ReadString('\n')
		for _, part := range strings.Split(strings.TrimRight(line, "\r\n"), "\r") {
			if part != "" {
				fn(part)
			}
		}
		if err != nil {
			return
		}
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
