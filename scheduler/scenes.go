package scheduler

import (
	"fmt"
	"slices"
	"time"
)

// AddScenes adds n scene tasks to an auto video once its plan task is
// done, each needing req. Scenes depend on plan (so they are ready at
// once) and the composite waits for all of them. n may be 0. It is
// PrepareScenes and AddPreparedScenes in one.
func (s *State) AddScenes(videoID string, n int, req Requirements, now time.Time) error {
	if _, err := s.sceneTarget(videoID); err != nil {
		return err
	}
	ps, err := PrepareScenes(videoID, n, req)
	if err != nil {
		return err
	}
	return s.AddPreparedScenes(ps, now)
}

// PreparedScenes are an auto video's scene tasks, checked and built,
// waiting for AddPreparedScenes.
type PreparedScenes struct {
	videoID string
	req     Requirements
	tasks   []task // nil once added
	added   bool
	// room is made here, off the driving goroutine, for the three lists
	// that grow by the scenes (the video's tasks, the plan's dependents,
	// the composite's deps), sized for an AutoGraph video; a video whose
	// lists are longer grows them as before.
	room []*task
}

// autoRoom is what an AutoGraph video's three lists hold before its
// scenes: three tasks, plan's one dependent (tts), composite's one dep
// (tts).
const autoRoom = 3 + 1 + 1

// PrepareScenes checks and builds the n scene tasks of video videoID
// without touching any State (see PrepareSubmit); req must not change
// until AddPreparedScenes.
func PrepareScenes(videoID string, n int, req Requirements) (*PreparedScenes, error) {
	if n < 0 || n > MaxScenes {
		return nil, fmt.Errorf("%w: scene count must be 0..%d, got %d", ErrInvalid, MaxScenes, n)
	}
	if n > 0 {
		if err := req.Validate(); err != nil {
			return nil, fmt.Errorf("scenes: %w", err)
		}
	}
	ps := &PreparedScenes{videoID: videoID, req: req, tasks: make([]task, n)}
	if n > 0 {
		ps.room = make([]*task, 0, autoRoom+3*n)
	}
	ids := taskIDs(videoID, n, func(i int) string { return sceneName(i + 1) })
	links := make([]*task, 2*n) // each scene's one dep and one dependent
	for i := range ps.tasks {
		t := &ps.tasks[i]
		*t = task{
			id:    ids[i],
			kind:  KindScene,
			state: TaskBlocked,
			lIdx:  -1,
		}
		t.deps, t.after, links = links[0:0:1], links[1:1:2], links[2:]
	}
	return ps, nil
}

// grow returns list with room for n more, carved from ps.room when it
// has the room.
func (ps *PreparedScenes) grow(list []*task, n int) []*task {
	if cap(list)-len(list) >= n {
		return list
	}
	need := len(list) + n
	if need > cap(ps.room)-len(ps.room) {
		return slices.Grow(list, n)
	}
	out := append(ps.room[len(ps.room):len(ps.room):len(ps.room)+need], list...)
	ps.room = ps.room[:len(ps.room)+need]
	return out
}

// sceneTarget returns the video scenes are added to, if it awaits them.
func (s *State) sceneTarget(videoID string) (*video, error) {
	v, err := s.video(videoID)
	if err != nil {
		return nil, err
	}
	switch {
	case v.state.terminal():
		return nil, fmt.Errorf("%w: video %q is %s", ErrWrongState, videoID, v.state)
	case v.mode != ModeAuto:
		return nil, fmt.Errorf("%w: video %q is not an auto video", ErrWrongState, videoID)
	case v.scenesAdded:
		return nil, fmt.Errorf("%w: video %q already has its scenes", ErrWrongState, videoID)
	case v.plan.state != TaskDone:
		return nil, fmt.Errorf("%w: video %q: scenes are added after plan is done", ErrWrongState, videoID)
	}
	return v, nil
}

// AddPreparedScenes adds prepared scenes to their video as of now, as
// AddScenes would have. Prepared scenes are added once, to one State.
func (s *State) AddPreparedScenes(ps *PreparedScenes, now time.Time) error {
	if ps == nil || ps.added {
		return fmt.Errorf("%w: the prepared scenes were already added", ErrInvalid)
	}
	v, err := s.sceneTarget(ps.videoID)
	if err != nil {
		return err
	}
	ps.added = true
	s.changed(v)
	n := len(ps.tasks)
	at := ms(now)
	v.sceneBase, v.scenes = len(v.tasks), n
	v.tasks = ps.grow(v.tasks, n)
	v.plan.after = ps.grow(v.plan.after, n)
	v.gate.deps = ps.grow(v.gate.deps, n)
	ps.room = nil
	var cls *class
	if n > 0 {
		cls = s.classFor(ps.req)
	}
	for i := range ps.tasks {
		sc := &ps.tasks[i]
		sc.v, sc.idx, sc.sub, sc.seq, sc.cls = v, int32(len(v.tasks)), v.submitted, v.seq, cls
		v.tasks = append(v.tasks, sc)
		link(v.plan, sc)
		link(sc, v.gate)
	}
	s.ntasks += n
	ps.tasks = nil
	v.scenesAdded = true
	v.gate.pending--
	for _, t := range v.tasks {
		if t.state == TaskBlocked && t.pending == 0 {
			s.makeReady(t, at)
		}
	}
	return nil
}
