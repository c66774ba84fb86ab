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

// maxReasonRunes bounds the text of a fail report; maxReasonHeadRunes
// bounds the part of it taken from the start of a reason too long for it.
const (
	maxReasonRunes     = 600
	maxReasonHeadRunes = 200
)

// task is one held lease and the work running under it.
type task struct {
	asg    wire.Assignment
	log    *slog.Logger
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	pct      float64
	finished bool // the stage has ended; only its report is left
	// leaseEnd is, by this machine's clock, when the lease runs out unless
	// a heartbeat renews it: its grant's or last renewal's send time plus
	// the lease's length.
	leaseEnd time.Time
}

// renewLease moves the lease's end to until, never back.
func (t *task) renewLease(until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if until.After(t.leaseEnd) {
		t.leaseEnd = until
	}
}

// leaseLeft is how long the lease may still be valid.
func (t *task) leaseLeft() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Until(t.leaseEnd)
}

// retryWait is the pause before trying again a call about t that failed
// for the attempt-th time with a transient error, and false when it is
// time to give up: after at least tries, once no heartbeat has renewed
// the lease within its length (the control plane has requeued the task by
// then, and would refuse what this node sends). A pause ends at the
// lease's end at the latest, so that the last try comes while it may
// still be valid.
func (t *task) retryWait(b *backoff, attempt, least int) (time.Duration, bool) {
	left := t.leaseLeft()
	if attempt >= least && left <= 0 {
		return 0, false
	}
	wait := b.next()
	if left > 0 && wait > left {
		wait = left
	}
	return wait, true
}

// renewed moves the lease end of each task a heartbeat sent at sentAt
// reported (sent: task id → lease token) and the control plane did not
// call stale.
func (a *agent) renewed(sent map[string]uint64, stale []string, sentAt time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	until := sentAt.Add(a.leaseLength(time.Time{}))
	for id, token := range sent {
		if t := a.held[id]; t != nil && t.asg.Token == token && !slices.Contains(stale, id) {
			t.renewLease(until)
		}
	}
}

// leaseLength is how long a lease lasts from its grant or renewal: what
// the control plane said at registration, else until deadline (an
// assignment's), else fallbackLease. a.mu is held.
func (a *agent) leaseLength(deadline time.Time) time.Duration {
	if a.leaseFor > 0 {
		return a.leaseFor
	}
	if d := time.Until(deadline); d > 0 {
		return d
	}
	return fallbackLease
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
	t.leaseEnd = time.Now().Add(a.leaseLength(asg.Deadline))
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
		execCtx, stopExec = context.WithTimeoutCause(ctx, a.cfg.TaskTimeout,
			fmt.Errorf("%w (%s): the stage was stopped", errTaskTimeout, a.cfg.TaskTimeout))
	}
	res, err := a.execute(execCtx, t)
	if ctx.Err() == nil && errors.Is(context.Cause(execCtx), errTaskTimeout) {
		// Tools and runners report the cause with what they were doing (a
		// runner's stderr); a stage that ended otherwise gets it here.
		switch {
		case err == nil:
			err = context.Cause(execCtx)
		case !errors.Is(err, errTaskTimeout):
			err = fmt.Errorf("%w: %w", context.Cause(execCtx), err)
		}
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
		case !transient(err):
			t.log.Error("the control plane did not take the "+what+" report", "attempts", attempt, "err", err)
			return false
		}
		wait, ok := t.retryWait(b, attempt, reportAttempts)
		if !ok {
			t.log.Error("the control plane did not take the "+what+" report; giving up: the lease has run out unless a heartbeat got through",
				"attempts", attempt, "err", err)
			return false
		}
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
// space collapsed, the work dir taken out of the paths in it, at most
// maxReasonRunes. The text becomes a failed video's error.message, which
// the customer reads: a tool's stderr names its files by the paths the
// agent gave it, and where the node keeps its work is none of their
// business (the agent's own log keeps the whole error).
//
// A longer reason keeps the start of its first line (what failed: the
// stage, the runner, its exit status), at most maxReasonHeadRunes, and
// fills the rest with its end, an ellipsis between: a tool's stderr puts
// the real error (the Python traceback's last line, ffmpeg's final
// complaint) at the end.
func failReason(err error, workDir string) string {
	s := err.Error()
	for _, d := range workDirForms(workDir) {
		s = strings.ReplaceAll(s, d+string(filepath.Separator), "")
	}
	first, _, _ := strings.Cut(s, "\n")
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxReasonRunes {
		return s
	}
	// The collapsed first line is where the collapsed whole starts.
	const gap = " … "
	r := []rune(s)
	head := min(utf8.RuneCountInString(strings.Join(strings.Fields(first), " ")), maxReasonHeadRunes)
	tail := maxReasonRunes - head - utf8.RuneCountInString(gap)
	return strings.TrimLeft(strings.TrimSpace(string(r[:head]))+gap, " ") + strings.TrimSpace(string(r[len(r)-tail:]))
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
