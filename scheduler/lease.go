package scheduler

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Lease is a node's right to run one task until Deadline. Token is the
// fencing token: it is unique, grows with every lease the state grants,
// and a report is accepted only with the current lease's node and token.
type Lease struct {
	TaskID    string       `json:"task_id"`
	VideoID   string       `json:"video_id"`
	AccountID string       `json:"account_id"`
	NodeID    string       `json:"node_id"`
	Token     uint64       `json:"token"`
	Kind      Kind         `json:"kind"`
	Req       Requirements `json:"req"`
	GPUIDs    []string     `json:"gpu_ids,omitempty"` // the GPUs it holds on the node
	Attempt   int          `json:"attempt"`           // 1 for the first lease of the task
	GrantedAt time.Time    `json:"granted_at"`
	Deadline  time.Time    `json:"deadline"` // expires when now >= Deadline
}

// Ref is the lease's identity for reports.
func (l Lease) Ref() LeaseRef { return LeaseRef{TaskID: l.TaskID, NodeID: l.NodeID, Token: l.Token} }

// LeaseRef names a lease in reports from its holder.
type LeaseRef struct {
	TaskID string `json:"task_id"`
	NodeID string `json:"node_id"`
	Token  uint64 `json:"token"`
}

// lease is the mutable record behind Lease.
type lease struct {
	node     *node
	token    uint64
	gpus     []string
	granted  int64
	deadline int64
	// nIdx is the task's index in node.leased; here rather than in task,
	// which needs it only while leased (lease is 64 bytes either way).
	nIdx int32
}

func (t *task) leaseRef() LeaseRef {
	return LeaseRef{TaskID: t.id, NodeID: t.lease.node.spec.ID, Token: t.lease.token}
}

func (t *task) leaseInfo() Lease {
	l := t.lease
	return Lease{
		TaskID:    t.id,
		VideoID:   t.v.id,
		AccountID: t.v.acct.id,
		NodeID:    l.node.spec.ID,
		Token:     l.token,
		Kind:      t.kind,
		Req:       t.cls.req.clone(),
		GPUIDs:    l.gpuIDs(),
		Attempt:   int(t.attempts),
		GrantedAt: fromMS(l.granted),
		Deadline:  fromMS(l.deadline),
	}
}

func leaseMS(d time.Duration) (int64, error) {
	if d < time.Millisecond {
		return 0, fmt.Errorf("%w: lease duration must be at least 1ms, got %v", ErrInvalid, d)
	}
	return d.Milliseconds(), nil
}

// grant leases ready task t to node n. The caller has checked that t fits.
func (s *State) grant(t *task, n *node, now, dur int64) {
	s.changed(t.v)
	s.unready(t)
	s.served(t.v.acct)
	s.nextToken++
	l := s.newLease()
	*l = lease{node: n, token: s.nextToken, gpus: l.gpus[:0], granted: now, deadline: now + dur}
	if need := t.cls.req.GPUs; need > cap(l.gpus) {
		l.gpus = s.gpuIDRoom(need)
	}
	l.gpus = n.takeGPUs(t, l.gpus)
	n.usedCPU += t.cls.req.CPUSlots
	l.nIdx = int32(len(n.leased))
	n.leased = append(n.leased, t)
	t.lease = l
	t.state = TaskLeased
	t.attempts++
	t.percent = 0
	s.pushLease(t)
	if t.v.state == VideoQueued {
		t.v.state = VideoProcessing
	}
}

// gpuIDs copies the lease's GPU ids for a record: nil for a CPU task's
// lease, whose reused record may keep an empty slice's room.
func (l *lease) gpuIDs() []string {
	if len(l.gpus) == 0 {
		return nil
	}
	return slices.Clone(l.gpus)
}

// newLease returns a lease record to fill, the one last given back if any:
// records kept for reuse are the ones the state wrote last, in the cache of
// the goroutine that drives it, where a record in each task (made with the
// task, maybe on another goroutine: PrepareSubmit) was a cache miss on
// every grant. There are as many as leases were ever held at once.
func (s *State) newLease() *lease {
	n := len(s.spareLeases)
	if n == 0 {
		return new(lease)
	}
	l := s.spareLeases[n-1]
	s.spareLeases[n-1] = nil
	s.spareLeases = s.spareLeases[:n-1]
	return l
}

// spareLease keeps l, whose lease ended, for newLease; its GPU id slice
// keeps its room.
func (s *State) spareLease(l *lease) {
	*l = lease{gpus: l.gpus[:0]}
	s.spareLeases = append(s.spareLeases, l)
}

// gpuIDRoom returns an empty slice with room for n GPU ids, carved from a
// shared block: most tasks are leased once, so a slice of their own would
// be one more allocation per GPU task.
func (s *State) gpuIDRoom(n int) []string {
	const block = 512
	if n > block/8 {
		return make([]string, 0, n)
	}
	if cap(s.gpuIDs)-len(s.gpuIDs) < n {
		s.gpuIDs = make([]string, 0, block)
	}
	start := len(s.gpuIDs)
	s.gpuIDs = s.gpuIDs[:start+n]
	return s.gpuIDs[start : start : start+n]
}

// releaseLease ends t's lease: frees the node's resources and the
// account's running slot. The caller sets t's next state.
func (s *State) releaseLease(t *task) {
	s.changed(t.v)
	l := t.lease
	n := l.node
	if len(l.gpus) > 0 {
		for i := range n.gpus { // only its lease's GPUs are busy with t
			if g := &n.gpus[i]; g.busy == t {
				g.busy = nil
			}
		}
	}
	n.usedCPU -= t.cls.req.CPUSlots
	last := len(n.leased) - 1
	n.leased[l.nIdx] = n.leased[last]
	n.leased[l.nIdx].lease.nIdx = l.nIdx
	n.leased[last] = nil
	n.leased = n.leased[:last]
	s.removeLease(t)
	t.lease = nil
	s.spareLease(l)
	t.v.acct.finished()
}

// holder returns the task ref names if ref is its current lease, and
// ErrStaleLease (or ErrUnknownTask) otherwise.
func (s *State) holder(ref LeaseRef) (*task, error) {
	t, ok := s.task(ref.TaskID)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTask, ref.TaskID)
	}
	if t.lease == nil {
		return t, fmt.Errorf("%w: task %s has no lease (it is %s)", ErrStaleLease, t.id, t.state)
	}
	if t.lease.node.spec.ID != ref.NodeID || t.lease.token != ref.Token {
		return t, fmt.Errorf("%w: task %s is leased to %s with token %d, not %s with token %d",
			ErrStaleLease, t.id, t.lease.node.spec.ID, t.lease.token, ref.NodeID, ref.Token)
	}
	return t, nil
}

// Renew extends the lease to now+dur (never shortens it).
func (s *State) Renew(ref LeaseRef, now time.Time, dur time.Duration) (Lease, error) {
	d, err := leaseMS(dur)
	if err != nil {
		return Lease{}, err
	}
	t, err := s.holder(ref)
	if err != nil {
		return Lease{}, err
	}
	if dl := ms(now) + d; dl > t.lease.deadline {
		t.lease.deadline = dl
		s.fixLease(t)
		s.changed(t.v)
	}
	return t.leaseInfo(), nil
}

// HeartbeatResult says which of the leases a node listed were renewed and
// which are stale (the node must stop those tasks).
type HeartbeatResult struct {
	Renewed []Lease    `json:"renewed,omitempty"`
	Stale   []LeaseRef `json:"stale,omitempty"`
}

// Heartbeat records that a node is alive and renews the leases it lists as
// held, to now+dur. Leases it holds but does not list are left to expire.
func (s *State) Heartbeat(nodeID string, held []LeaseRef, now time.Time, dur time.Duration) (HeartbeatResult, error) {
	if _, err := leaseMS(dur); err != nil {
		return HeartbeatResult{}, err
	}
	n, err := s.node(nodeID)
	if err != nil {
		return HeartbeatResult{}, err
	}
	s.touch(n, ms(now))
	var res HeartbeatResult
	for _, ref := range held {
		if ref.NodeID != nodeID {
			res.Stale = append(res.Stale, ref)
			continue
		}
		l, err := s.Renew(ref, now, dur)
		if err != nil {
			res.Stale = append(res.Stale, ref)
			continue
		}
		res.Renewed = append(res.Renewed, l)
	}
	return res, nil
}

// Progress records the holder's percent (0..100) for its task.
func (s *State) Progress(ref LeaseRef, percent float64) error {
	if math.IsNaN(percent) || percent < 0 || percent > 100 {
		return fmt.Errorf("%w: percent must be 0..100, got %v", ErrInvalid, percent)
	}
	t, err := s.holder(ref)
	if err != nil {
		return err
	}
	t.percent = percent
	s.changed(t.v)
	return nil
}

// Complete records that the holder finished its task: the lease ends, the
// node's resources free up, dependents become ready. A repeat from the
// same holder after success returns Outcome.Duplicate and no error.
func (s *State) Complete(ref LeaseRef, now time.Time) (Outcome, error) {
	t, err := s.holder(ref)
	if err != nil {
		if t != nil && t.state == TaskDone && t.doneNode == ref.NodeID && t.doneToken == ref.Token {
			return Outcome{TaskID: t.id, VideoID: t.v.id, Duplicate: true}, nil
		}
		return Outcome{}, err
	}
	return s.complete(t, ref, now), nil
}

// complete ends the current lease ref of t as a success.
func (s *State) complete(t *task, ref LeaseRef, now time.Time) Outcome {
	out := Outcome{TaskID: t.id, VideoID: t.v.id}
	t.doneNode, t.doneToken = ref.NodeID, ref.Token
	t.cls.noteDone(ms(now), ms(now)-t.lease.granted)
	s.releaseLease(t)
	s.finishTask(t, ms(now), &out)
	return out
}

// Fail records that the holder could not run its task. The task is
// requeued, unless it has now failed on Config.MaxNodeFailures distinct
// nodes or Config.MaxAttempts times: then it and its video fail
// (Outcome.VideoFailed: refund) and the video's other leases are revoked.
func (s *State) Fail(ref LeaseRef, message string, now time.Time) (Outcome, error) {
	return s.FailWithBackoff(ref, message, now, 0)
}

// FailPermanently records that the holder could not run its task and that
// no attempt can: the holder found the video's own input unusable (an
// image address that answers 404, or a certificate for another name), so
// the task and its video fail now, as they would after the last retry,
// rather than wait out retries that would all fail the same way.
func (s *State) FailPermanently(ref LeaseRef, message string, now time.Time) (Outcome, error) {
	t, err := s.holder(ref)
	if err != nil {
		return Outcome{}, err
	}
	return s.endAttempt(t, message, ms(now), 0, true), nil
}

// failAttempt ends t's lease as a failure on its node; a requeued task
// waits out its backoff from base (see requeue).
func (s *State) failAttempt(t *task, message string, now, base int64) Outcome {
	return s.endAttempt(t, message, now, base, false)
}

// endAttempt is failAttempt; final fails the task whatever its retries left.
func (s *State) endAttempt(t *task, message string, now, base int64, final bool) Outcome {
	out := Outcome{TaskID: t.id, VideoID: t.v.id}
	nodeID := t.lease.node.spec.ID
	s.releaseLease(t)
	h := t.history()
	h.failures++
	if !slices.Contains(h.failedNodes, nodeID) {
		h.failedNodes = append(h.failedNodes, nodeID)
	}
	if !final && len(h.failedNodes) < s.cfg.MaxNodeFailures && h.failures < s.cfg.MaxAttempts {
		s.requeue(t, message, now, base)
		out.Requeued = true
		return out
	}
	t.state = TaskFailed
	v := t.v
	v.failedTask = t.id
	v.failure = fmt.Sprintf("task %s failed %d time(s) on %d node(s); last: %s", t.name(), h.failures, len(h.failedNodes), message)
	if final {
		v.failure = fmt.Sprintf("task %s failed and was not retried, as no attempt can succeed: %s", t.name(), message)
	}
	out.VideoFailed = true
	out.Failure = v.failure
	s.endVideo(v, VideoFailed, &out)
	return out
}
