package scheduler

import (
	"slices"
	"strings"
	"time"
)

// Kind is the kind of a task in a video's graph.
type Kind string

// Task kinds. Manual videos run render then finalize; auto videos run plan,
// then tts and one scene per planned scene, then composite.
const (
	KindRender    Kind = "render"    // GPU: model inference for a manual video
	KindFinalize  Kind = "finalize"  // CPU: encode/mux, poster still
	KindPlan      Kind = "plan"      // CPU: script and scenes from the prompt
	KindTTS       Kind = "tts"       // CPU: voiceover with espeak-ng
	KindScene     Kind = "scene"     // GPU: one scene of an auto video
	KindComposite Kind = "composite" // CPU: avatar, brand kit, scenes, voice, captions
	KindAvatar    Kind = "avatar"    // CPU: an account's avatar portrait (job)
	KindSpeech    Kind = "speech"    // CPU: a speech sample (job)
)

// Weight is the share of a video's percent that tasks of this kind carry.
// For KindScene it is the share of all scenes together, divided equally
// among them once AddScenes knows how many there are; so percent never
// goes backwards when scenes are added. Unknown kinds weigh 0.
func (k Kind) Weight() int {
	switch k {
	case KindRender:
		return 85
	case KindFinalize:
		return 15
	case KindPlan:
		return 10
	case KindTTS:
		return 10
	case KindScene:
		return 60
	case KindComposite:
		return 20
	case KindAvatar, KindSpeech:
		return 100
	}
	return 0
}

func (k Kind) valid() bool { return k.Weight() > 0 }

// TaskState is where a task is in its life.
type TaskState string

// Task states.
const (
	TaskBlocked  TaskState = "blocked"  // waits for dependencies (or for AddScenes)
	TaskReady    TaskState = "ready"    // queued for placement
	TaskRetrying TaskState = "retrying" // failed; waits for its retry time, then ready (retry.go)
	TaskLeased   TaskState = "leased"   // held by a node under a lease
	TaskDone     TaskState = "done"     // completed by its lease holder
	TaskFailed   TaskState = "failed"   // failed on too many nodes; its video failed
	TaskCanceled TaskState = "canceled" // its video failed or was cancelled
)

func (s TaskState) terminal() bool {
	return s == TaskDone || s == TaskFailed || s == TaskCanceled
}

// Task is a read-only copy of one task, as returned by State.Task.
type Task struct {
	ID          string       `json:"id"`
	VideoID     string       `json:"video_id"`
	Name        string       `json:"name"`
	Kind        Kind         `json:"kind"`
	Req         Requirements `json:"req"`
	Deps        []string     `json:"deps,omitempty"` // task names within the video
	State       TaskState    `json:"state"`
	Attempts    int          `json:"attempts"`               // leases granted so far
	Failures    int          `json:"failures"`               // failed or expired leases
	FailedNodes []string     `json:"failed_nodes,omitempty"` // distinct, in order of failure
	Percent     float64      `json:"percent"`                // last reported, while leased
	Lease       *Lease       `json:"lease,omitempty"`        // current lease, while leased
	RetryAt     *time.Time   `json:"retry_at,omitempty"`     // while retrying: when it is ready again
}

// task is the mutable record behind Task. The fields every placement and
// completion reads or writes come first, so that a task's trip through the
// queue, the lease and its completion touches few of its cache lines;
// those read by status, retries and failures come last. Its lease is a
// record of its own (State.newLease), and so is what only a task that
// failed has (taskHistory); its name is read from its id and whether it
// awaits scenes from its video. A queued task is what every garbage
// collection marks, for the whole queue, so it holds no room it does not
// use: an auto video's three tasks take 640 bytes, not 1,024
// (BenchmarkQueueMark, TestTaskLayout).
type task struct {
	v     *video
	cls   *class     // its requirements: cls.req
	aq    *acctQueue // queue position while ready
	lease *lease     // while leased, else nil (State.newLease)
	sub   int64      // v.submitted, copied: part of the age key
	seq   uint64     // v.seq, copied: part of the age key
	idx   int32      // position in v.tasks: part of the age key
	// pending counts unfinished deps, plus one while the task waits for
	// AddScenes (the composite of an auto video).
	pending  int32
	lIdx     int32 // index in State.leaseHeap
	attempts int32 // leases granted
	state    TaskState
	readyAt  int64 // unix ms it last became ready
	percent  float64
	id       string
	kind     Kind
	after    []*task // dependents
	// the last completion, so a retried Complete by the same holder is a
	// no-op: kept here, not in hist, so a task that succeeds allocates
	// nothing more (the simulator completes millions).
	doneNode  string
	doneToken uint64
	hist      *taskHistory

	deps []*task
}

// name is t's name within its video: the part of its id after the video's
// id and "/" (taskID; neither holds a "/"), read there rather than kept
// beside it.
func (t *task) name() string { return t.id[strings.LastIndexByte(t.id, '/')+1:] }

// weight is t's share of its video's progress: its kind's weight, which
// an auto video's scenes share.
func (t *task) weight() float64 {
	w := float64(t.kind.Weight())
	if t.kind == KindScene {
		w /= float64(t.v.scenes)
	}
	return w
}

// taskHistory is what a task keeps of its failed attempts, made on the
// first: most tasks never fail and have none.
type taskHistory struct {
	failures int
	// failedNodes are the distinct nodes it failed on, in order.
	failedNodes []string
	// retryAt and lastFailure: while TaskRetrying, when it is ready again
	// and why its last attempt failed.
	retryAt     int64
	lastFailure string
}

// history is t's history to write, made if it has none yet.
func (t *task) history() *taskHistory {
	if t.hist == nil {
		t.hist = new(taskHistory)
	}
	return t.hist
}

// noHistory is the history of a task that never failed. Read only: what
// writes goes through history.
var noHistory taskHistory

// past is t's history to read: no failures, failed nodes or retry (retryAt
// 0) for a task that never failed.
func (t *task) past() *taskHistory {
	if t.hist == nil {
		return &noHistory
	}
	return t.hist
}

// awaitsScenes reports whether t is the task of an auto video that waits
// for its scenes (pending counts them).
func (t *task) awaitsScenes() bool { return t.v.gate == t }

// older reports whether a is ahead of b in age order: older video first,
// then submission order, then position in the graph. Unique per task.
func (a *task) older(b *task) bool {
	if a.sub != b.sub {
		return a.sub < b.sub
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.idx < b.idx
}

func (t *task) info() Task {
	out := Task{
		ID:          t.id,
		VideoID:     t.v.id,
		Name:        t.name(),
		Kind:        t.kind,
		Req:         t.cls.req.clone(),
		State:       t.state,
		Attempts:    int(t.attempts),
		Failures:    t.past().failures,
		FailedNodes: slices.Clone(t.past().failedNodes),
		Percent:     t.percent,
	}
	for _, d := range t.deps {
		out.Deps = append(out.Deps, d.name())
	}
	if t.lease != nil {
		l := t.leaseInfo()
		out.Lease = &l
	}
	if t.state == TaskRetrying {
		at := fromMS(t.past().retryAt)
		out.RetryAt = &at
	}
	return out
}

// taskID is the id of the task named name in video videoID.
func taskID(videoID, name string) string { return videoID + "/" + name }

// taskIDs returns the ids of n tasks of video videoID, named by name(i),
// as parts of one string: a video's tasks live and die together, and a
// busy farm names them by the million.
func taskIDs(videoID string, n int, name func(i int) string) []string {
	size := 0
	for i := range n {
		size += len(videoID) + 1 + len(name(i))
	}
	var b strings.Builder
	b.Grow(size)
	for i := range n {
		b.WriteString(videoID)
		b.WriteByte('/')
		b.WriteString(name(i))
	}
	all := b.String()
	ids := make([]string, n)
	for i := range n {
		l := len(videoID) + 1 + len(name(i))
		ids[i], all = all[:l], all[l:]
	}
	return ids
}

// task returns the task with the given id. There is no index by task id:
// the id names its video (names have no "/") and the video finds the name,
// which saves a map insert and delete per task in a busy farm.
func (s *State) task(id string) (*task, bool) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return nil, false
	}
	v, ok := s.videos[id[:i]]
	if !ok {
		return nil, false
	}
	t := v.taskNamed(id[i+1:])
	return t, t != nil
}

// taskNamed returns v's task with the given name, or nil. A scene is found
// by its number (scene k is usually v.tasks[v.sceneBase+k-1]); other
// names, and scenes out of place, by a scan.
func (v *video) taskNamed(name string) *task {
	if k, ok := sceneNumber(name); ok {
		if i := v.sceneBase + k - 1; i >= 0 && i < len(v.tasks) && v.tasks[i].name() == name {
			return v.tasks[i]
		}
	}
	for _, t := range v.tasks {
		if t.name() == name {
			return t
		}
	}
	return nil
}

// sceneNumber parses a scene name as sceneName writes it.
func sceneNumber(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "scene-")
	if !ok || len(digits) < 4 {
		return 0, false
	}
	k := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + int(c-'0')
		if k > MaxScenes {
			return 0, false
		}
	}
	return k, true
}
