package scheduler

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

const backoff = 10 * time.Second

// failBackoff fails l with the backoff base and checks it was requeued.
func failBackoff(t *testing.T, s *State, l Lease, now time.Time) {
	t.Helper()
	out, err := s.FailWithBackoff(l.Ref(), "runner crashed", now, backoff)
	must(t, err)
	if !out.Requeued || out.VideoFailed {
		t.Fatalf("outcome %+v, want requeued", out)
	}
	must(t, checkInvariants(s))
}

// oneNodeOneVideo is a state with node n1 (one 24 GB GPU) and one manual
// video v whose render is leased to n1.
func oneNodeOneVideo(t *testing.T, cfg Config) (*State, Lease) {
	t.Helper()
	s := newState(t, cfg)
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	return s, mustPlace(t, s, "n1", at(0))
}

func noWork(t *testing.T, s *State, node string, now time.Time) {
	t.Helper()
	if l, err := s.Place(node, now, leaseDur); !errors.Is(err, ErrNoWork) {
		t.Fatalf("Place(%s) at %v = %+v, %v; want ErrNoWork", node, now, l, err)
	}
}

// TestBackoffOnTheOnlyNode: a task that fails on the farm's only capable
// node waits base, then 2 × base, before each retry; the status says so.
func TestBackoffOnTheOnlyNode(t *testing.T) {
	s, l := oneNodeOneVideo(t, Config{MaxAttempts: 10})
	failBackoff(t, s, l, at(1))

	if tk, _ := s.Task(l.TaskID); tk.State != TaskRetrying || s.Stats().RetryingTasks != 1 {
		t.Fatalf("task is %s (%d retrying), want retrying", tk.State, s.Stats().RetryingTasks)
	}
	st, err := s.VideoStatus("v")
	must(t, err)
	if st.Reason != ReasonRetrying || st.QueuePosition != 0 {
		t.Fatalf("status %+v, want %s", st, ReasonRetrying)
	}
	t.Logf("message: %s", st.Message)
	noWork(t, s, "n1", at(1).Add(backoff-time.Millisecond))
	if s.ExpiryDue(at(1).Add(backoff - time.Millisecond)) {
		t.Fatal("expiry due before the retry time")
	}
	if !s.ExpiryDue(at(1).Add(backoff)) {
		t.Fatal("expiry not due at the retry time")
	}
	l2 := mustPlace(t, s, "n1", at(1).Add(backoff))
	if l2.TaskID != l.TaskID || l2.Attempt != 2 || s.Stats().RetryingTasks != 0 {
		t.Fatalf("retry lease %+v (%d retrying)", l2, s.Stats().RetryingTasks)
	}

	// The second failure waits twice as long; Expire releases it.
	failBackoff(t, s, l2, at(20))
	if res := s.Expire(at(20).Add(2*backoff - time.Millisecond)); res.Retried != 0 {
		t.Fatalf("released early: %+v", res)
	}
	if res := s.Expire(at(20).Add(2 * backoff)); res.Retried != 1 {
		t.Fatalf("Expire at the retry time: %+v", res)
	}
	if tk, _ := s.Task(l.TaskID); tk.State != TaskReady {
		t.Fatalf("task is %s after its retry time, want ready", tk.State)
	}
	must(t, checkInvariants(s))
}

// TestBackoffOnlyWithoutFreshNodes: while a capable node has not failed the
// task, a failure requeues it at once.
func TestBackoffOnlyWithoutFreshNodes(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	must(t, s.UpsertNode(gpuNode("n2", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	l := mustPlace(t, s, "n1", at(0))
	failBackoff(t, s, l, at(1))
	if tk, _ := s.Task(l.TaskID); tk.State != TaskReady {
		t.Fatalf("task is %s with a fresh node left, want ready", tk.State)
	}
	l2 := mustPlace(t, s, "n2", at(1))
	failBackoff(t, s, l2, at(2))
	if tk, _ := s.Task(l.TaskID); tk.State != TaskRetrying {
		t.Fatalf("task is %s after failing on both nodes, want retrying", tk.State)
	}
	// Plain Fail never waits.
	noWork(t, s, "n1", at(2))
	l3 := mustPlace(t, s, "n1", at(2).Add(2*backoff))
	out, err := s.Fail(l3.Ref(), "again", at(30))
	must(t, err)
	if tk, _ := s.Task(l.TaskID); !out.VideoFailed && tk.State != TaskReady {
		t.Fatalf("after Fail the task is %s", tk.State)
	}
}

// TestBackoffCap: the wait stops doubling at 32 × base.
func TestBackoffCap(t *testing.T) {
	s := newState(t, Config{MaxAttempts: 20})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	submitManual(t, s, "v", "a", 0, gpuReq("m", 1, 8), at(0))
	now := at(0)
	for k := 1; k <= 8; k++ {
		l := mustPlace(t, s, "n1", now)
		failBackoff(t, s, l, now)
		wait := backoff << (k - 1)
		if k > 5 {
			wait = 32 * backoff
		}
		noWork(t, s, "n1", now.Add(wait-time.Millisecond))
		now = now.Add(wait)
	}
}

// TestRetryingSurvivesSnapshotAndCancel: a retrying task is kept by a
// snapshot, comes back at its time after a restore, and a cancelled video's
// retrying task is never placed.
func TestRetryingSurvivesSnapshotAndCancel(t *testing.T) {
	s := newState(t, Config{})
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(0)))
	submitManual(t, s, "v1", "a", 0, gpuReq("m", 1, 8), at(0))
	submitManual(t, s, "v2", "b", 0, gpuReq("m", 1, 8), at(0))
	l1 := mustPlace(t, s, "n1", at(0))
	failBackoff(t, s, l1, at(1))
	l2 := mustPlace(t, s, "n1", at(1))
	failBackoff(t, s, l2, at(2))

	snap := s.Snapshot()
	r, err := Restore(snap)
	must(t, err)
	if !reflect.DeepEqual(r.Snapshot(), snap) {
		t.Fatal("a restored state snapshots differently")
	}
	must(t, checkInvariants(r))
	for _, st := range []*State{s, r} {
		if _, err := st.Cancel(l1.VideoID, at(3)); err != nil {
			t.Fatal(err)
		}
		// At v1's retry time nothing of v1 comes back; v2's comes at its own.
		noWork(t, st, "n1", at(1).Add(backoff))
		l := mustPlace(t, st, "n1", at(2).Add(backoff))
		if l.VideoID != l2.VideoID {
			t.Fatalf("placed %s, want %s", l.VideoID, l2.VideoID)
		}
		if tk, _ := st.Task(l1.TaskID); tk.State != TaskCanceled {
			t.Fatalf("cancelled video's task is %s", tk.State)
		}
		must(t, checkInvariants(st))
	}
}

func TestFailWithBackoffRefusesNegative(t *testing.T) {
	s, l := oneNodeOneVideo(t, Config{})
	if _, err := s.FailWithBackoff(l.Ref(), "x", at(1), -time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative backoff: %v", err)
	}
}

// TestNewNodeTakesRetryingTask: a node that registers during the wait and
// has not failed the task takes it at once.
func TestNewNodeTakesRetryingTask(t *testing.T) {
	s, l := oneNodeOneVideo(t, Config{})
	failBackoff(t, s, l, at(1))
	must(t, s.UpsertNode(gpuNode("n2", 1, 24, "m"), at(2)))
	if tk, _ := s.Task(l.TaskID); tk.State != TaskReady {
		t.Fatalf("task is %s after a fresh node registered, want ready", tk.State)
	}
	l2 := mustPlace(t, s, "n2", at(2))
	if l2.TaskID != l.TaskID {
		t.Fatalf("the new node got %+v", l2)
	}
	// A node that cannot run it (no such model) changes nothing.
	failBackoff(t, s, l2, at(3))
	must(t, s.UpsertNode(gpuNode("n3", 1, 24, "other-model"), at(4)))
	if tk, _ := s.Task(l.TaskID); tk.State != TaskRetrying {
		t.Fatalf("task is %s after an unfit node registered, want retrying", tk.State)
	}
	// Re-registering a node that failed it does not release it either.
	must(t, s.UpsertNode(gpuNode("n1", 1, 24, "m"), at(5)))
	if tk, _ := s.Task(l.TaskID); tk.State != TaskRetrying {
		t.Fatalf("task is %s after a node that failed it registered again", tk.State)
	}
	must(t, checkInvariants(s))
}
