package scheduler

import (
	"fmt"
	"time"
)

// VideoState is where a video is, as far as scheduling goes.
type VideoState string

// Video states. Queued: no task has been leased yet. Processing: at least
// one has. Failed videos are refunded by the caller.
const (
	VideoQueued     VideoState = "queued"
	VideoProcessing VideoState = "processing"
	VideoCompleted  VideoState = "completed"
	VideoFailed     VideoState = "failed"
	VideoCanceled   VideoState = "canceled"
)

func (s VideoState) terminal() bool {
	return s == VideoCompleted || s == VideoFailed || s == VideoCanceled
}

// MaxPriority bounds VideoInfo.Priority in both directions.
const MaxPriority = 1_000_000

// Outcome tells the caller what a state change did beyond its own task.
type Outcome struct {
	TaskID  string `json:"task_id,omitempty"`
	VideoID string `json:"video_id"`
	// Duplicate: a repeated Complete from the holder that already
	// completed the task; nothing changed.
	Duplicate bool `json:"duplicate,omitempty"`
	// Requeued: the task went back to the queue (failure or expiry below
	// the limits).
	Requeued bool `json:"requeued,omitempty"`
	// NeedsScenes: plan completed; call AddScenes with the scene count.
	NeedsScenes bool `json:"needs_scenes,omitempty"`
	// VideoCompleted: every task of the video is done.
	VideoCompleted bool `json:"video_completed,omitempty"`
	// VideoFailed: the task failed on too many nodes and the video failed:
	// refund it. Failure says why.
	VideoFailed bool   `json:"video_failed,omitempty"`
	Failure     string `json:"failure,omitempty"`
	// Revoked lists the other leases of the video that were revoked
	// because it failed or was cancelled; their holders should stop.
	Revoked []LeaseRef `json:"revoked,omitempty"`
}

// video is one submitted video and its tasks.
type video struct {
	id          string
	acct        *account
	mode        Mode
	prio        int
	seq         uint64
	submitted   int64 // unix ms
	state       VideoState
	scenesAdded bool
	tasks       []*task
	done        int    // tasks in TaskDone
	gate        *task  // the task awaiting scenes, auto only
	plan        *task  // auto only
	slab        []task // room reserved for tasks still to be created
	sceneBase   int    // index in tasks of scene 1 (see taskNamed)
	scenes      int    // scene tasks (AddScenes), which share KindScene's weight
	failedTask  string
	failure     string
}

func (s *State) video(id string) (*video, error) {
	v, ok := s.videos[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownVideo, id)
	}
	return v, nil
}

func (s *State) newTask(v *video, id string, kind Kind, req Requirements) *task {
	cls := s.classFor(req)
	t := v.alloc()
	*t = task{
		id:    id,
		v:     v,
		idx:   int32(len(v.tasks)),
		sub:   v.submitted,
		seq:   v.seq,
		kind:  kind,
		cls:   cls,
		state: TaskBlocked,
		lIdx:  -1,
	}
	v.tasks = append(v.tasks, t)
	s.ntasks++
	return t
}

// alloc returns a task record from the reserved room, or a new one.
func (v *video) alloc() *task {
	if len(v.slab) == 0 {
		return new(task)
	}
	t := &v.slab[0]
	v.slab = v.slab[1:]
	return t
}

// link makes after depend on dep.
func link(dep, after *task) {
	after.deps = append(after.deps, dep)
	dep.after = append(dep.after, after)
	if dep.state != TaskDone {
		after.pending++
	}
}

// finishTask marks t done and unblocks its dependents.
func (s *State) finishTask(t *task, now int64, out *Outcome) {
	v := t.v
	s.changed(v)
	t.state = TaskDone
	t.percent = 100
	v.done++
	for _, d := range t.after {
		d.pending--
		if d.pending == 0 && d.state == TaskBlocked {
			s.makeReady(d, now)
		}
	}
	if t == v.plan && !v.scenesAdded {
		out.NeedsScenes = true
	}
	if v.done == len(v.tasks) && (v.mode != ModeAuto || v.scenesAdded) {
		v.state = VideoCompleted
		out.VideoCompleted = true
	}
}

// endVideo moves v to a terminal state and cancels every unfinished task,
// revoking leases.
func (s *State) endVideo(v *video, state VideoState, out *Outcome) {
	s.changed(v)
	v.state = state
	for _, t := range v.tasks {
		switch t.state {
		case TaskReady:
			s.unready(t)
		case TaskLeased:
			out.Revoked = append(out.Revoked, t.leaseRef())
			s.releaseLease(t)
		case TaskBlocked, TaskRetrying: // a retrying task's heap entry is skipped when it comes up
		default:
			continue
		}
		t.state = TaskCanceled
	}
}

// Cancel stops a video that has not finished: its ready tasks leave the
// queue and its leases are revoked (listed in the outcome).
func (s *State) Cancel(videoID string, now time.Time) (Outcome, error) {
	v, err := s.video(videoID)
	if err != nil {
		return Outcome{}, err
	}
	if v.state.terminal() {
		return Outcome{}, fmt.Errorf("%w: video %q is %s", ErrWrongState, videoID, v.state)
	}
	out := Outcome{VideoID: videoID}
	s.endVideo(v, VideoCanceled, &out)
	return out, nil
}

// Forget drops a finished (completed, failed or cancelled) video and its
// tasks from the state, so the state does not grow without bound. The
// account's fair-share record stays.
func (s *State) Forget(videoID string) error {
	v, err := s.video(videoID)
	if err != nil {
		return err
	}
	if !v.state.terminal() {
		return fmt.Errorf("%w: video %q is %s", ErrWrongState, videoID, v.state)
	}
	s.ntasks -= len(v.tasks)
	delete(s.videos, videoID)
	s.changed(v)
	return nil
}
