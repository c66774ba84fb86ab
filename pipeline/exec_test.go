package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOSExecutor(t *testing.T) {
	requireTools(t, "sh")
	ctx := testCtx(t)
	out, err := OSExecutor{}.Run(ctx, Command{Name: "sh", Args: []string{"-c", "cat; echo done"}, Stdin: strings.NewReader("in\n")})
	if err != nil || string(out) != "in\ndone\n" {
		t.Errorf("stdout %q, %v", out, err)
	}

	var lines []string
	out, err = OSExecutor{}.Run(ctx, Command{Name: "sh", Args: []string{"-c", `printf 'a\nb\rc\n\nd'`}, OnStdoutLine: func(l string) { lines = append(lines, l) }})
	if err != nil || out != nil || !reflect.DeepEqual(lines, []string{"a", "b", "c", "d"}) {
		t.Errorf("lines %q, stdout %q, %v", lines, out, err)
	}

	_, err = OSExecutor{}.Run(ctx, Command{Name: "sh", Args: []string{"-c", "echo first >&2; echo boom >&2; exit 3"}})
	var te *ToolError
	if !errors.As(err, &te) || !errors.Is(err, ErrToolFailed) || te.ExitCode != 3 || te.Stderr != "first\nboom\n" || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failure: %#v", err)
	}

	_, err = OSExecutor{}.Run(ctx, Command{Name: "vidfarm-no-such-tool"})
	if !errors.Is(err, ErrToolMissing) {
		t.Errorf("missing tool: %v", err)
	}
}

func TestOSExecutorCancelKillsTheProcessGroup(t *testing.T) {
	requireTools(t, "sh", "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	_, err := OSExecutor{}.Run(ctx, Command{Name: "sh", Args: []string{"-c", "echo started; sleep 30 & wait"}, OnStdoutLine: func(string) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	if b.String() != "cdefg" {
		t.Errorf("tail %q", b.String())
	}
}

func TestFFmpegProgress(t *testing.T) {
	var got []int
	rep := newReporter(func(p int) { got = append(got, p) })
	parse := ffmpegProgress(10*time.Second, rep.span(0, 50))
	for _, l := range []string{"frame=1", "out_time_us=1000000", "out_time_us=N/A", "out_time_us=1000000", "out_time_us=5000000", "progress=continue", "out_time_us=20000000"} {
		parse(l)
	}
	rep.report(100)
	if want := []int{5, 25, 49, 100}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress %v, want %v", got, want)
	}
}

// TestOSExecutorEndsWithTheProgram: the run ends when the program exits,
// not when the last process holding its stdout or stderr does (a child it
// started in the background, a runner the OOM killer SIGKILLed while its
// children live on), and a program killed by a signal is reported by the
// signal's name.
func TestOSExecutorEndsWithTheProgram(t *testing.T) {
	requireTools(t, "sh", "sleep")
	tests := []struct {
		name   string
		script string // $1 is a file to write the background child's pid to
		lines  bool   // stdout through OnStdoutLine
		msg    string // in the error; "" for success
	}{
		{"child holds stdout (lines)", `sleep 45 & echo $! > "$1"; echo 'progress 50'`, true, ""},
		{"child holds stdout (buffered)", `sleep 45 & echo $! > "$1"; echo done`, false, ""},
		{"killed by SIGKILL, child lingers", `sleep 45 & echo $! > "$1"; echo 'CUDA out of' >&2; kill -KILL $$`, true,
			"sh was killed by signal SIGKILL (out of memory?): CUDA out of"},
		{"killed by SIGTERM", `sleep 45 & echo $! > "$1"; kill -TERM $$`, false, "sh was killed by signal SIGTERM: (no stderr)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			c := Command{Name: "sh", Args: []string{"-c", tc.script, "sh", pidFile}}
			var lines []string
			if tc.lines {
				c.OnStdoutLine = func(l string) { lines = append(lines, l) }
			}
			start := time.Now()
			_, err := OSExecutor{}.Run(testCtx(t), c)
			// The child sleeps 45 s: waiting for it would take that long.
			if took := time.Since(start); took > pipeGrace+8*time.Second {
				t.Errorf("Run took %v: it waited for the program's child", took)
			}
			switch {
			case tc.msg == "" && err != nil:
				t.Errorf("Run = %v, want success", err)
			case tc.msg != "" && (err == nil || err.Error() != tc.msg || !errors.Is(err, ErrToolFailed)):
				t.Errorf("Run = %v, want %q", err, tc.msg)
			}
			if tc.lines && tc.msg == "" && !reflect.DeepEqual(lines, []string{"progress 50"}) {
				t.Errorf("stdout lines %q", lines)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid)
		})
	}
}

// TestOSExecutorStoppedSaysWhy: a program its context stops is reported
// with the context's cause (a runner's timeout names itself) and the tail
// of its stderr, and still matches the context's error.
func TestOSExecutorStoppedSaysWhy(t *testing.T) {
	requireTools(t, "sh", "sleep")
	cause := errors.New("runner wan: the task ran past its timeout of 300ms")
	ctx, cancel := context.WithTimeoutCause(testCtx(t), 300*time.Millisecond, cause)
	defer cancel()
	_, err := OSExecutor{}.Run(ctx, Command{Name: "/bin/sh", Args: []string{"-c", "echo 'loading weights' >&2; echo 'step 3/50' >&2; exec sleep 30"}})
	if !errors.Is(err, cause) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want the cause, matching context.DeadlineExceeded", err)
	}
	if want := "sh: runner wan: the task ran past its timeout of 300ms; its stderr ended: loading weights\nstep 3/50"; err == nil || err.Error() != want {
		t.Errorf("Run = %q, want %q", err, want)
	}
}

// TestOSExecutorEnvironment: programs do not see the agent's VIDFARM_*
// settings (its token), only what the command adds.
func TestOSExecutorEnvironment(t *testing.T) {
	requireTools(t, "sh")
	t.Setenv("VIDFARM_TOKEN", "agent-secret")
	t.Setenv("VIDFARM_RUNNER", "wan=/opt/wan.sh")
	t.Setenv("KEEP_ME", "kept")
	for _, extra := range [][]string{nil, {"CUDA_VISIBLE_DEVICES=1", "VIDFARM_GIVEN=yes"}} {
		out, err := OSExecutor{}.Run(testCtx(t), Command{Name: "sh", Args: []string{"-c", "env"}, Env: extra})
		if err != nil {
			t.Fatal(err)
		}
		env := strings.Split(strings.TrimSpace(string(out)), "\n")
		if slices.Contains(env, "VIDFARM_TOKEN=agent-secret") || slices.Contains(env, "VIDFARM_RUNNER=wan=/opt/wan.sh") {
			t.Errorf("extra %q: the agent's VIDFARM_ settings reached the program: %q", extra, env)
		}
		if !slices.Contains(env, "KEEP_ME=kept") {
			t.Errorf("extra %q: the rest of the environment is lost: %q", extra, env)
		}
		for _, kv := range extra {
			if !slices.Contains(env, kv) {
				t.Errorf("extra %q: %s missing", extra, kv)
			}
		}
	}
}
