package scheduler

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Reason says why a video waits. Codes are stable; messages may change.
type Reason string

// Reason codes.
const (
	// ReasonNone: the video is not waiting (a task runs, or it finished).
	ReasonNone Reason = ""
	// ReasonWaitingForDependencies: nothing is ready or running; the next
	// task waits for earlier ones (e.g. scenes not yet added after plan).
	ReasonWaitingForDependencies Reason = "waiting_for_dependencies"
	// ReasonNoNodeSupportsModel: no live node supports the task's model.
	ReasonNoNodeSupportsModel Reason = "no_node_supports_model"
	// ReasonInsufficientGPUMemory: nodes support the model, but none has
	// enough GPUs with enough memory for it.
	ReasonInsufficientGPUMemory Reason = "insufficient_gpu_memory"
	// ReasonNoNodeFits: no live node has the tools or CPU slots the task
	// needs (or no node is registered at all).
	ReasonNoNodeFits Reason = "no_node_fits"
	// ReasonFairShare: the account already runs tasks and other accounts
	// with fewer running tasks are served first.
	ReasonFairShare Reason = "fair_share_in_use"
	// ReasonNodesBusy: nodes that can run the task exist but are busy with
	// work ahead of it.
	ReasonNodesBusy Reason = "all_matching_nodes_busy"
	// ReasonRetrying: the video's next task failed and waits before it is
	// tried again (retry.go).
	ReasonRetrying Reason = "retrying_after_failure"
	// ReasonNextInLine: nodes that can run the task exist and nothing waits
	// ahead of it for them; it starts when one of them has room and asks
	// for work (agents pull their work). Given only once the state says so
	// (SetNextInLine); before, such a task was ReasonNodesBusy.
	ReasonNextInLine Reason = "next_in_line"
)

// VideoStatus is what a waiting or running video reports.
type VideoStatus struct {
	VideoID   string     `json:"video_id"`
	AccountID string     `json:"account_id"`
	State     VideoState `json:"state"`
	// QueuePosition is 1-based while the video waits (no task leased and
	// one ready), 0 otherwise. See VideoStatus (the method) for how it is
	// estimated.
	QueuePosition int `json:"queue_position"`
	// Reason and Message say why the video waits (ReasonNone otherwise).
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Percent is the weighted progress 0..100 (100 once completed).
	Percent    int `json:"percent"`
	TasksDone  int `json:"tasks_done"`
	TasksTotal int `json:"tasks_total"`
	// Stage names the step a processing video is at (Stage*; "" otherwise,
	// and for jobs); ScenesDone and ScenesTotal count an auto video's
	// scenes once its plan made them.
	Stage       string `json:"stage,omitempty"`
	ScenesDone  int    `json:"scenes_done,omitempty"`
	ScenesTotal int    `json:"scenes_total,omitempty"`
	// FailedTask and Failure are set when the video failed.
	FailedTask string `json:"failed_task,omitempty"`
	Failure    string `json:"failure,omitempty"`
}

// VideoStatus reports a video's state, percent and, while it waits, its
// queue position and the reason.
//
// Percent weighs each task by its kind (Kind.Weight; scenes share one
// weight): a done task counts fully, a leased one by its reported percent.
//
// QueuePosition is an estimate computed from the per-account queues of
// one bucket, without scanning tasks: the video's oldest ready task is
// placed among the ready tasks of the same requirement class (those that
// compete for the same nodes) in the order Place would serve them if no
// task finished meanwhile: every task of a higher priority first, then
// round robin from the accounts' current running counts. It is exact under
// that assumption for one class; tasks of other classes that compete for
// some of the same nodes, completions, and the warm-model preference make
// it approximate.
func (s *State) VideoStatus(videoID string) (VideoStatus, error) {
	v, err := s.video(videoID)
	if err != nil {
		return VideoStatus{}, err
	}
	st := VideoStatus{
		VideoID:    v.id,
		AccountID:  v.acct.id,
		State:      v.state,
		TasksDone:  v.done,
		TasksTotal: len(v.tasks),
		FailedTask: v.failedTask,
		Failure:    v.failure,
		Percent:    v.percent(),
	}
	st.Stage, st.ScenesDone, st.ScenesTotal = v.stage()
	if v.state.terminal() {
		return st, nil
	}
	var waiting, retrying *task
	for _, t := range v.tasks {
		if t.state == TaskLeased {
			return st, nil
		}
		if t.state == TaskReady && (waiting == nil || t.older(waiting)) {
			waiting = t
		}
		if t.state == TaskRetrying && (retrying == nil || t.past().retryAt < retrying.past().retryAt) {
			retrying = t
		}
	}
	if waiting == nil && retrying != nil {
		st.Reason, st.Message = retryReason(retrying)
		return st, nil
	}
	if waiting == nil {
		st.Reason = ReasonWaitingForDependencies
		st.Message = "waiting for earlier steps of the video"
		return st, nil
	}
	st.QueuePosition = s.position(waiting)
	st.Reason, st.Message = s.reason(waiting, st.QueuePosition)
	return st, nil
}

func (v *video) percent() int {
	if v.state == VideoCompleted {
		return 100
	}
	var total, done float64
	for _, t := range v.tasks {
		w := t.weight()
		total += w
		switch t.state {
		case TaskDone:
			done += w
		case TaskLeased:
			done += w * t.percent / 100
		}
	}
	if v.mode == ModeAuto && !v.scenesAdded {
		total += float64(KindScene.Weight())
	}
	if total == 0 {
		return 0
	}
	return min(int(math.Floor(100*done/total)), 99)
}

// position estimates t's 1-based place in the queue (see VideoStatus).
func (s *State) position(t *task) int {
	aq := t.aq
	pos := 1
	for _, l := range s.levels {
		if l.prio <= aq.lvl.prio {
			break
		}
		if b := l.bucket(t.cls.idx); b != nil {
			pos += b.tasks
		}
	}
	rank := s.rankOf(aq, t) // the account's own tasks ahead of t
	// Round robin by levels: with no task finishing, an account starting
	// at r running tasks is served once at each level r, r+1, ... until
	// its queue is empty. Within a level, accounts that start there go
	// first, then those that reached it by being served, in the order they
	// were served at the level below; which comes to ordering a level by
	// (start level, highest first; then the fair-share stamp and id).
	a := aq.acct
	level := a.running + rank // the level at which t is served
	// Each entry's copies of its account's running count and last service
	// (key) and of its task count (n) make this a pass over the heap's
	// array: only a tie on both reads the other account, for its id.
	heap := aq.b.heap
	for i := range heap {
		e := &heap[i]
		if e.aq == aq {
			pos += rank
			continue
		}
		running, n := e.key.running, e.n
		pos += min(max(level-running, 0), n) // its services at lower levels
		active := running <= level && level < running+n
		if active && (running > a.running || (running == a.running && (e.key.served < a.lastServed ||
			(e.key.served == a.lastServed && e.key.acct.id < a.id)))) {
			pos++ // served before t at t's own level
		}
	}
	return pos
}

// reason says why ready task t, at queue position pos, is not running.
func (s *State) reason(t *task, pos int) (Reason, string) {
	if t.cls.capable == 0 {
		return s.diagnose(&t.cls.req)
	}
	top := t.aq.b.heap[0].aq.acct
	if a := t.v.acct; top != a && a.running > 0 && top.running < a.running {
		return ReasonFairShare, fmt.Sprintf("the account already runs %d task(s); accounts with fewer running tasks go first", a.running)
	}
	// A video created on an idle farm is not yet placed when its create
	// answers (the node takes it at its next poll), so "busy with work
	// ahead" would be untrue of it, and of any task first in line.
	if pos == 1 && s.nextInLine {
		return ReasonNextInLine, fmt.Sprintf("next in line for the %d node(s) that can run %s: it starts when one of them has room and asks for work", t.cls.capable, t.kind)
	}
	return ReasonNodesBusy, fmt.Sprintf("all %d node(s) that can run %s are busy with work ahead of this video", t.cls.capable, t.kind)
}

// SetNextInLine makes a task first in line for capable nodes report
// ReasonNextInLine instead of ReasonNodesBusy. The reason a create reports
// is kept in replicated state (its video.created event), so the control
// plane turns this on at one log entry, once every member knows the reason.
func (s *State) SetNextInLine(on bool) { s.nextInLine = on }

// diagnose explains why no live node can run r. It scans the nodes, which
// is fine: it only runs for work no node can take.
func (s *State) diagnose(r *Requirements) (Reason, string) {
	var live, held, model, memory int
	for _, n := range s.nodes { // counts only: order-independent
		if !n.live() {
			if !n.down {
				held++ // cordoned by an operator, or its agent drains
			}
			continue
		}
		live++
		if r.Model != "" && !n.models[r.Model] {
			continue
		}
		model++
		probe := Requirements{GPUs: r.GPUs, GPUMemoryGB: r.GPUMemoryGB}
		if n.staticFit(&probe) {
			memory++
		}
	}
	gb := strconv.FormatFloat(r.GPUMemoryGB, 'g', -1, 64)
	switch {
	case live == 0 && held > 0:
		return ReasonNoNodeFits, fmt.Sprintf("no node is online: %d node(s) cordoned or draining take no new work", held)
	case live == 0:
		return ReasonNoNodeFits, "no node is online"
	case r.Model != "" && model == 0:
		return ReasonNoNodeSupportsModel, fmt.Sprintf("no online node supports model %s", r.Model)
	case memory == 0:
		return ReasonInsufficientGPUMemory, fmt.Sprintf("no online node that supports %s has %d GPU(s) with %s GB free", modelName(r), r.GPUs, gb)
	}
	return ReasonNoNodeFits, fmt.Sprintf("no online node offers %d CPU slot(s) with tools [%s] for %s", r.CPUSlots, strings.Join(r.Tools, " "), modelName(r))
}

func modelName(r *Requirements) string {
	if r.Model == "" {
		return "this task"
	}
	return "model " + r.Model
}

// DoneShare is the weighted share, 0..1, of a video's work that finished
// tasks did: what a cancel charges for (a task still running counts for
// nothing, so a customer never pays for a part that was not delivered to
// the next step). An auto video whose scenes are not planned yet counts
// its scenes' weight as undone, as percent does.
func (s *State) DoneShare(videoID string) (float64, error) {
	v, err := s.video(videoID)
	if err != nil {
		return 0, err
	}
	var total, done float64
	for _, t := range v.tasks {
		w := t.weight()
		total += w
		if t.state == TaskDone {
			done += w
		}
	}
	if v.mode == ModeAuto && !v.scenesAdded {
		total += float64(KindScene.Weight())
	}
	if total == 0 {
		return 0, nil
	}
	return done / total, nil
}

// Stages of a processing video, in the order an auto video goes through
// them (a manual one: rendering, then finalizing).
const (
	StagePlanning        = "planning"
	StageVoicing         = "voicing"
	StageRenderingScenes = "rendering_scenes"
	StageCompositing     = "compositing"
	StageRendering       = "rendering"
	StageFinalizing      = "finalizing"
)

// stage is the step a processing video is at, and its scenes done and in
// all. An auto video voices its script and renders its scenes at the same
// time; it says voicing until a scene starts, then rendering_scenes until
// the last is done, then voicing again if the voice is still running.
func (v *video) stage() (string, int, int) {
	if v.state != VideoProcessing {
		return "", 0, 0
	}
	var planDone, ttsDone, renderDone bool
	scenes, scenesDone, scenesStarted := 0, 0, false
	for _, t := range v.tasks {
		if t.state == TaskDone {
			switch t.kind {
			case KindPlan:
				planDone = true
			case KindTTS:
				ttsDone = true
			case KindRender:
				renderDone = true
			}
		}
		if t.kind == KindScene {
			scenes++
			switch t.state {
			case TaskDone:
				scenesDone++
				scenesStarted = true
			case TaskLeased:
				scenesStarted = true
			}
		}
	}
	switch v.mode {
	case ModeManual:
		if !renderDone {
			return StageRendering, 0, 0
		}
		return StageFinalizing, 0, 0
	case ModeAuto:
		switch {
		case !planDone || !v.scenesAdded:
			return StagePlanning, 0, 0
		case scenesDone < scenes && (scenesStarted || ttsDone):
			return StageRenderingScenes, scenesDone, scenes
		case !ttsDone:
			return StageVoicing, scenesDone, scenes
		}
		return StageCompositing, scenesDone, scenes
	}
	return "", 0, 0
}
