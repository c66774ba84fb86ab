package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// errTaskTimeout ends a stage that ran past Config.TaskTimeout.
var errTaskTimeout = errors.New("the task ran past the agent's task timeout")

// maxReasonRunes bounds the text of a fail report.
const maxReasonRunes = 600

// task is one held lease and the work running under it.
type task struct {
	asg    wire.Assignment
	log    *slog.Logger
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	pct      float64
	finished bool // the stage has ended; only its report is left
}

// finish marks the stage as ended.
func (t *task) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finished = true
}

// isFinished reports whether only the task's report is left.
func (t *task) isFinished() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.finished
}

func (t *task) percent() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pct
}

// setPercent records progress; it never goes backwards and stays below 100
// until the task is reported complete.
func (t *task) setPercent(p float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pct = max(t.pct, min(p, 99))
}

// runTask runs one leased task to its end: its stage in a fresh directory
// of the work dir, progress reports, then complete or fail. A task whose
// lease went stale, whose credential was lost or that the drain timeout
// cancelled reports nothing.
func (a *agent) runTask(asg wire.Assignment) {
	ctx, cancel := context.WithCancelCause(a.tasksCtx)
	defer cancel(nil)
	t := &task{
		asg:    asg,
		cancel: cancel,
		log: a.log.With("task_id", asg.TaskID, "video_id", asg.Video.ID, "kind", string(asg.Kind),
			"task", asg.Name, "attempt", asg.Attempt),
	}
	a.mu.Lock()
	if old := a.held[asg.TaskID]; old != nil {
		// The control plane leased this task again, so the lease of the run
		// still going here (from before a pause or a partition) is stale:
		// stop that run. Its end must not drop this run's entry (below), or
		// heartbeats would stop renewing this lease.
		old.log.Warn("the task was leased to this node again: stopping the run of the stale lease", "new_attempt", asg.Attempt)
		old.cancel(errStaleLease)
	}
	a.held[asg.TaskID] = t
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.held[asg.TaskID] == t {
			delete(a.held, asg.TaskID)
		}
		a.taskEnded()
		a.mu.Unlock()
	}()
	t.log.Info("task leased", "gpus", asg.GPUIDs, "deadline", asg.Deadline)
	start := time.Now()
	outcome := outcomeDropped
	a.m.started(string(asg.Kind))
	defer func() { a.m.ended(string(asg.Kind), outcome, time.Since(start)) }()

	progressCtx, stopProgress := context.WithCancel(ctx)
	var progressDone sync.WaitGroup
	progressDone.Go(func() { a.reportProgress(progressCtx, t) })

	execCtx, stopExec := ctx, context.CancelFunc(func() {})
	if a.cfg.TaskTimeout > 0 {
		execCtx, stopExec = context.WithTimeoutCause(ctx, a.cfg.TaskTimeout, errTaskTimeout)
	}
	res, err := a.execute(execCtx, t)
	if ctx.Err() == nil && errors.Is(context.Cause(execCtx), errTaskTimeout) {
		err = fmt.Errorf("%w (%s): the stage was stopped", errTaskTimeout, a.cfg.TaskTimeout)
	}
	stopExec()
	stopProgress()
	progressDone.Wait()
	t.finish()

	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errStaleLease):
			t.log.Info("task dropped: its lease is stale; result discarded")
			return
		case errors.Is(cause, errCredentialLost), errors.Is(cause, errShutdown):
			t.log.Info("task dropped", "why", cause.Error())
			return
		}
	}
	if errors.Is(err, errStaleLease) {
		// An upload was refused (409 stale_lease): the lease is another
		// node's now, so there is nothing to report, not even a failure.
		t.log.Info("task dropped: its lease is stale; result discarded", "err", err)
		return
	}
	if err != nil {
		t.log.Warn("task failed", "err", err, "elapsed", time.Since(start).Round(time.Millisecond).String())
		reason := failReason(err, a.cfg.WorkDir)
		if a.report(ctx, t, "fail", func(ctx context.Context, cred string) error {
			return a.cp.fail(ctx, cred, asg.TaskID, wire.FailRequest{Token: asg.Token, Reason: reason, Permanent: isUnusableInput(err)})
		}) {
			outcome = outcomeFailed
		}
		return
	}
	res.Token = asg.Token
	if a.report(ctx, t, "complete", func(ctx context.Context, cred string) error {
		return a.cp.complete(ctx, cred, asg.TaskID, res)
	}) {
		outcome = outcomeCompleted
		t.log.Info("task completed", "elapsed", time.Since(start).Round(time.Millisecond).String(),
			"artifacts", len(res.Artifacts), "scenes", res.Scenes, "duration_seconds", res.DurationSeconds)
	}
}

// report sends a complete or fail report, retrying transient errors; it
// reports whether the control plane took it.
func (a *agent) report(ctx context.Context, t *task, what string, send func(ctx context.Context, cred string) error) bool {
	b := a.backoff()
	for attempt := 1; ; attempt++ {
		cred, gen := a.session()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := send(cctx, cred)
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, errStaleLease):
			t.log.Info("lease is stale: the control plane refused the "+what+" report; result discarded", "err", err)
			return false
		case a.unauthorized(err, gen):
			t.log.Warn(what+" report lost with the node's credential", "err", err)
			return false
		case ctx.Err() != nil:
			t.log.Warn(what+" report abandoned", "why", context.Cause(ctx), "err", err)
			return false
		case !transient(err) || attempt == reportAttempts:
			t.log.Error("the control plane did not take the "+what+" report", "attempts", attempt, "err", err)
			return false
		}
		wait := b.next()
		t.log.Warn(what+" report failed; retrying", "try", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", err)
		if !sleep(ctx, wait) {
			return false
		}
	}
}

// reportProgress posts the task's percent at most once per
// ProgressInterval, when it changed, until ctx ends. A stale answer
// cancels the task.
func (a *agent) reportProgress(ctx context.Context, t *task) {
	tick := time.NewTicker(ProgressInterval)
	defer tick.Stop()
	sent := -1.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := t.percent()
		if p == sent {
			continue
		}
		cred, gen := a.session()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := a.cp.progress(cctx, cred, t.asg.TaskID, wire.ProgressRequest{Token: t.asg.Token, Percent: p})
		cancel()
		switch {
		case err == nil:
			sent = p
		case errors.Is(err, errStaleLease):
			t.log.Warn("lease is stale (progress report): stopping the task and discarding its result")
			t.cancel(errStaleLease)
			return
		case a.unauthorized(err, gen):
			return
		case ctx.Err() == nil:
			t.log.Debug("progress report failed", "err", err)
		}
	}
}

// failReason is the text of a fail report: the error on one line, white
// space collapsed, the work dir taken out of the paths in it, cut to
// maxReasonRunes. The text becomes a failed video's error.message, which
// the customer reads: a tool's stderr names its files by the paths the
// agent gave it, and where the node keeps its work is none of their
// business (the agent's own log keeps the whole error).
func failReason(err error, workDir string) string {
	s := err.Error()
	for _, d := range workDirForms(workDir) {
		s = strings.ReplaceAll(s, d+string(filepath.Separator), "")
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxReasonRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxReasonRunes-1]) + "…"
}

// workDirForms are the ways a path under dir may be written: as given and
// absolute, longest first, so that the longer is taken out whole.
func workDirForms(dir string) []string {
	if dir == "" {
		return nil
	}
	forms := []string{filepath.Clean(dir)}
	if abs, err := filepath.Abs(dir); err == nil && abs != forms[0] {
		forms = append(forms, abs)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil && !slices.Contains(forms, real) {
		forms = append(forms, real)
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return forms
}

// removeTaskDir removes a task's directory, logging what it cannot.
func removeTaskDir(t *task, dir string) {
	if err := os.RemoveAll(dir); err != nil {
		t.log.Warn("cannot remove the task directory", "dir", dir, "err", err)
	}
}
