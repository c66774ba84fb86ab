package pipeline

import (
	"context"
	"errors"
	"reflect"
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
