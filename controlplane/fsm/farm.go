package fsm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// Node is a registered agent. What it offers lives in the scheduler; this is who
// it is and how it proves it.
type Node struct {
	ID           string   `msgpack:"id"`
	Name         string   `msgpack:"name"`
	CredHash     [32]byte `msgpack:"cred_hash"`
	Virtual      bool     `msgpack:"virtual"`
	RegisteredAt int64    `msgpack:"registered_at"`
	// Voices are the voices the node registered, sorted by id, ids unique;
	// nil for none. They never change while the node is registered, so the
	// copies reads return share them: read them, never write to them.
	Voices []Voice `msgpack:"voices,omitempty"`
	// Maintenance is the operator's mark (maintenance.go); nil while the
	// node is active. Shared by read copies like Voices.
	Maintenance *Maintenance `msgpack:"maintenance,omitempty"`
}

// LeaseResult answers LeaseTask: a lease, or why there is none.
type LeaseResult struct {
	Lease scheduler.Lease
	Found bool
	// Why says why nothing was placed when Found is false.
	Why string
}

func timeOf(ns int64) time.Time { return time.Unix(0, ns) }

func leaseDur(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

func (s *state) applyRegisterNode(c *RegisterNode) (Node, error) {
	spec := c.Node
	spec.ID = c.NodeID
	spec.Tools = s.nodeTools(spec.Tools, normalizeVoices(c.Voices))
	maint := s.inherited(c.NodeID, c.Name)
	// The new node first: a spec the scheduler refuses leaves the old one in place.
	if err := s.sched.UpsertNode(spec, timeOf(c.Now)); err != nil {
		return Node{}, fmt.Errorf("register node %s: %w", c.Name, err)
	}
	if maint != nil {
		if err := s.sched.SetCordoned(c.NodeID, true, timeOf(c.Now)); err != nil {
			return Node{}, fmt.Errorf("register node %s: %w", c.Name, err)
		}
	}
	n := &Node{ID: c.NodeID, Name: c.Name, CredHash: c.CredHash, Virtual: c.Virtual, RegisteredAt: c.Now,
		Voices: normalizeVoices(c.Voices), Maintenance: maint}
	if old, ok := s.nodes[n.ID]; ok { // the same id again: its record is replaced
		s.voices.remove(old.Voices)
		delete(s.nodeByCred, old.CredHash)
	}
	// The new node's voices are counted before the replaced nodes' are
	// uncounted, so a node registering again with the same voices leaves the
	// catalogue as it was.
	s.voices.add(n.Voices)
	s.nodes[n.ID] = n
	s.nodeByCred[n.CredHash] = n.ID
	defer s.voices.sync()
	var replaced []string
	for id, old := range s.nodes {
		if old.Name == c.Name && id != c.NodeID {
			replaced = append(replaced, id)
		}
	}
	slices.Sort(replaced) // removal order decides requeue order: keep it replica-independent
	for _, id := range replaced {
		if err := s.removeNode(id, c.Now); err != nil {
			return Node{}, err
		}
	}
	return *n, nil
}

func (s *state) removeNode(id string, now int64) error {
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("node %s: %w", id, scheduler.ErrUnknownNode)
	}
	if _, err := s.sched.RemoveNode(id, timeOf(now)); err != nil && !errors.Is(err, scheduler.ErrUnknownNode) {
		return fmt.Errorf("remove node %s: %w", id, err)
	}
	delete(s.nodeByCred, n.CredHash)
	delete(s.nodes, id)
	s.voices.remove(n.Voices)
	s.voices.sync()
	return nil
}

func (s *state) applyDeregisterNode(c *DeregisterNode) (Nothing, error) {
	return Nothing{}, s.removeNode(c.NodeID, c.Now)
}

func (s *state) applyNodeHeartbeat(c *NodeHeartbeat) (scheduler.HeartbeatResult, error) {
	if _, ok := s.nodes[c.NodeID]; !ok {
		return scheduler.HeartbeatResult{}, fmt.Errorf("heartbeat: %w", scheduler.ErrUnknownNode)
	}
	if err := s.sched.SetDraining(c.NodeID, c.Draining); err != nil {
		return scheduler.HeartbeatResult{}, fmt.Errorf("heartbeat: %w", err)
	}
	refs := make([]scheduler.LeaseRef, len(c.Held))
	for i, h := range c.Held {
		refs[i] = scheduler.LeaseRef{TaskID: h.TaskID, NodeID: c.NodeID, Token: h.Token}
	}
	res, err := s.sched.Heartbeat(c.NodeID, refs, timeOf(c.Now), leaseDur(c.LeaseMS))
	if err != nil {
		return scheduler.HeartbeatResult{}, fmt.Errorf("heartbeat: %w", err)
	}
	for i, h := range c.Held {
		if !math.IsNaN(h.Percent) && h.Percent >= 0 && h.Percent <= 100 {
			_ = s.sched.Progress(refs[i], h.Percent) // stale refs are already in res.Stale
		}
	}
	return res, nil
}

func (s *state) applyLeaseTask(c *LeaseTask) (LeaseResult, error) {
	if _, ok := s.nodes[c.NodeID]; !ok {
		return LeaseResult{}, fmt.Errorf("lease: %w", scheduler.ErrUnknownNode)
	}
	l, err := s.sched.Place(c.NodeID, timeOf(c.Now), leaseDur(c.LeaseMS))
	if errors.Is(err, scheduler.ErrNoWork) {
		return LeaseResult{Why: err.Error()}, nil
	}
	if err != nil {
		return LeaseResult{}, fmt.Errorf("lease: %w", err)
	}
	if v, ok := s.videos[l.VideoID]; ok && v.Status == StatusQueued {
		v.Status = StatusProcessing
		v.StartedAt, v.UpdatedAt = c.Now, c.Now
		s.videoChanged(v, c.Now)
		s.emitVideo(v, EventVideoProcessing, c.Now)
	}
	s.jobLeased(l.VideoID, c.Now)
	return LeaseResult{Lease: l, Found: true}, nil
}

func (s *state) applyTaskProgress(c *TaskProgress) (Nothing, error) {
	ref := scheduler.LeaseRef{TaskID: c.TaskID, NodeID: c.NodeID, Token: c.Token}
	if err := s.sched.Progress(ref, c.Percent); err != nil {
		return Nothing{}, fmt.Errorf("progress of %s: %w", c.TaskID, err)
	}
	return Nothing{}, nil
}

// artifactPrefix is where a task's artifacts must live in the blob store.
func artifactPrefix(videoID, taskName string) string {
	return "videos/" + videoID + "/" + taskName + "/"
}

func (s *state) applyCompleteTask(c *CompleteTask) (scheduler.Outcome, error) {
	ref := scheduler.LeaseRef{TaskID: c.TaskID, NodeID: c.NodeID, Token: c.Token}
	t, ok := s.sched.Task(c.TaskID)
	if !ok {
		return scheduler.Outcome{}, fmt.Errorf("complete %s: %w", c.TaskID, scheduler.ErrUnknownTask)
	}
	prefix := artifactPrefix(t.VideoID, t.Name)
	for file, key := range c.Artifacts {
		if file == "" || strings.Contains(file, "/") || !strings.HasPrefix(key, prefix) || strings.Contains(key[len(prefix):], "/") {
			return scheduler.Outcome{}, fmt.Errorf("%w: artifact %q at %q: keys must be %s<file>", ErrInvalidCommand, file, key, prefix)
		}
	}
	timing := s.timing(t, c.NodeID, c.Now)
	out, err := s.sched.Complete(ref, timeOf(c.Now))
	if err != nil || out.Duplicate {
		return out, err
	}
	if out.VideoCompleted && s.jobCompleted(t.VideoID, c.Artifacts, c.DurationSeconds, c.Now) {
		return out, nil
	}
	v := s.videos[t.VideoID]
	if v == nil {
		return out, nil
	}
	if v.Artifacts == nil {
		v.Artifacts = map[string]string{}
	}
	for file, key := range c.Artifacts {
		v.Artifacts[t.Name+"/"+file] = key
	}
	if timing != nil {
		v.Timings = append(v.Timings, *timing)
	}
	v.UpdatedAt = c.Now
	s.touch(v)
	if out.NeedsScenes {
		if err := s.addScenes(v, c.Scenes, c.Now); err != nil {
			s.failVideo(v, "planning failed: "+err.Error(), c.Now)
			return out, nil
		}
	}
	if out.VideoCompleted {
		s.completeVideo(v, t.Name, c.DurationSeconds, c.Now)
	}
	return out, nil
}

// timing is how long t has run under its current lease at now, and on
// which kind of GPU; nil when t holds no lease.
func (s *state) timing(t scheduler.Task, node string, now int64) *TaskTiming {
	if t.Lease == nil {
		return nil
	}
	tt := &TaskTiming{Kind: string(t.Kind), Model: t.Req.Model, Millis: (now - t.Lease.GrantedAt.UnixNano()) / 1e6}
	if len(t.Lease.GPUIDs) > 0 {
		tt.GPU = s.sched.GPUModel(node, t.Lease.GPUIDs[0])
	}
	return tt
}

func (s *state) addScenes(v *Video, n int, now int64) error {
	if n < 1 || n > scheduler.MaxScenes {
		return fmt.Errorf("plan reported %d scenes; want 1..%d", n, scheduler.MaxScenes)
	}
	req, err := modelRequirements(models.AutoSceneModel, models.AutoResolution)
	if err != nil {
		return err
	}
	return s.sched.AddScenes(v.ID, n, req, timeOf(now))
}

// completeVideo marks v completed with the artifacts of its final task.
func (s *state) completeVideo(v *Video, final string, seconds float64, now int64) {
	v.Status = StatusCompleted
	v.Percent = 100
	v.Outputs = Outputs{
		Video:           v.Artifacts[final+"/video.mp4"],
		VideoNoCaptions: v.Artifacts[final+"/video_no_captions.mp4"],
		Captions:        v.Artifacts[final+"/captions.vtt"],
		CaptionsSRT:     v.Artifacts[final+"/captions.srt"],
		Poster:          v.Artifacts[final+"/poster.jpg"],
	}
	s.collectIntermediates(v, v.deliveries()...)
	if seconds > 0 {
		v.Spec.DurationSeconds = int(math.Round(seconds))
	}
	v.FinishedAt, v.UpdatedAt = now, now
	_ = s.sched.Forget(v.ID)
	s.emitVideoEvent(v, now)
	s.videoChanged(v, now)
}

// failVideo marks v failed and refunds its charge, in the same step.
func (s *state) failVideo(v *Video, reason string, now int64) {
	if _, err := s.sched.Cancel(v.ID, timeOf(now)); err == nil || errors.Is(err, scheduler.ErrWrongState) {
		_ = s.sched.Forget(v.ID)
	}
	if a := s.accounts[v.AccountID]; a != nil {
		s.move(a, LedgerRefund, v.CreditsCharged, v.ID, "", now)
	}
	s.collectIntermediates(v) // a failed video delivers nothing
	v.Status = StatusFailed
	v.ErrorMessage = reason
	v.CreditsRefunded = true
	v.FinishedAt, v.UpdatedAt = now, now
	s.emitVideoEvent(v, now)
	s.videoChanged(v, now)
}

func (s *state) applyFailTask(c *FailTask) (scheduler.Outcome, error) {
	ref := scheduler.LeaseRef{TaskID: c.TaskID, NodeID: c.NodeID, Token: c.Token}
	out, err := s.sched.FailWithBackoff(ref, c.Reason, timeOf(c.Now), time.Duration(max(c.BackoffMS, 0))*time.Millisecond)
	if err != nil {
		return scheduler.Outcome{}, fmt.Errorf("fail %s: %w", c.TaskID, err)
	}
	s.afterOutcome(out, c.Now)
	return out, nil
}

func (s *state) afterOutcome(out scheduler.Outcome, now int64) {
	if !out.VideoFailed || s.jobFailed(out.VideoID, out.Failure, now) {
		return
	}
	if v := s.videos[out.VideoID]; v != nil && (v.Status == StatusQueued || v.Status == StatusProcessing) {
		s.failVideo(v, "rendering failed: "+out.Failure, now)
	}
}

func (s *state) applyExpireLeases(c *ExpireLeases) (scheduler.ExpireResult, error) {
	res := s.sched.Expire(timeOf(c.Now))
	for _, out := range res.Expired {
		s.afterOutcome(out, c.Now)
	}
	return res, nil
}
