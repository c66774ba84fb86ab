package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

// What waits and why, and one video's task graph:
//
//	GET /admin/v1/queue[?account=ID&limit=N]  -> 200 QueueJSON (oldest first; limit 1..1000, default 100)
//	GET /admin/v1/videos/{id}                 -> 200 VideoInspectJSON

// QueueJSON answers GET /admin/v1/queue.
type QueueJSON struct {
	UnfinishedVideos int           `json:"unfinished_videos"`
	ReadyTasks       int           `json:"ready_tasks"`
	Waiting          []WaitingJSON `json:"waiting"`
	HasMore          bool          `json:"has_more"`
}

// WaitingJSON is one waiting video.
type WaitingJSON struct {
	VideoID       string    `json:"video_id"`
	AccountID     string    `json:"account_id"`
	Status        string    `json:"status"`
	Mode          string    `json:"mode"`
	Model         string    `json:"model,omitempty"`
	QueuePosition uint64    `json:"queue_position"`
	Reason        string    `json:"reason"`
	Message       string    `json:"message"`
	CreatedAt     time.Time `json:"created_at"`
	// Task is the task that waits; WaitingSince when it last became ready.
	Task         string     `json:"task,omitempty"`
	Kind         string     `json:"kind,omitempty"`
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
	RetryAt      *time.Time `json:"retry_at,omitempty"`
	LastFailure  string     `json:"last_failure,omitempty"`
	Failures     int        `json:"failures"`
}

// VideoInspectJSON answers GET /admin/v1/videos/{id}.
type VideoInspectJSON struct {
	VideoID   string `json:"video_id"`
	AccountID string `json:"account_id"`
	Status    string `json:"status"`
	Mode      string `json:"mode"`
	Model     string `json:"model,omitempty"`
	// Percent is 100 once completed and the scheduler's while queued or
	// processing; the state does not keep where a failed or canceled
	// video stopped, so for those it is 0 and means nothing.
	Percent         int    `json:"percent"`
	QueuePosition   uint64 `json:"queue_position,omitempty"`
	Reason          string `json:"reason,omitempty"`
	Message         string `json:"message,omitempty"`
	CreditsCharged  int64  `json:"credits_charged"`
	CreditsRefunded bool   `json:"credits_refunded"`
	// RefundedCredits is how many of CreditsCharged went back: all of a
	// failed video's, the unrendered part of a canceled one's. The flag
	// above is true for both, so it alone makes a partial refund look
	// whole.
	RefundedCredits int64      `json:"refunded_credits"`
	Error           string     `json:"error,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
	// Tasks are the graph while the video is unfinished; the scheduler
	// forgets a finished video's tasks, so then it is empty.
	Tasks []TaskJSON `json:"tasks"`
	// Timings are how long each finished task took on the node that
	// completed it (lease to completion), in the order they finished: all
	// that is left of a finished video's graph.
	Timings []TimingJSON `json:"timings"`
}

// TimingJSON is one finished task's service time.
type TimingJSON struct {
	Kind    string  `json:"kind"`
	Model   string  `json:"model,omitempty"`
	GPU     string  `json:"gpu,omitempty"` // the GPUs' product name; none for a CPU task
	Seconds float64 `json:"seconds"`
}

// TaskJSON is one task of a video's graph.
type TaskJSON struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	State       string     `json:"state"`
	Deps        []string   `json:"deps,omitempty"`
	Model       string     `json:"model,omitempty"`
	GPUs        int        `json:"gpus"`
	Attempts    int        `json:"attempts"`
	Failures    int        `json:"failures"`
	FailedNodes []string   `json:"failed_nodes,omitempty"`
	Percent     float64    `json:"percent"`
	ReadySince  *time.Time `json:"ready_since,omitempty"`
	RetryAt     *time.Time `json:"retry_at,omitempty"`
	LastFailure string     `json:"last_failure,omitempty"`
	// Node holds the lease while the task runs (Leased, LeaseDeadline);
	// DoneNode completed it.
	Node          string     `json:"node,omitempty"`
	Leased        *time.Time `json:"leased_at,omitempty"`
	LeaseDeadline *time.Time `json:"lease_deadline,omitempty"`
	DoneNode      string     `json:"done_node,omitempty"`
}

func (s *server) queueRoutes(r chi.Router) {
	r.Get("/admin/v1/queue", s.queue)
	r.Get("/admin/v1/videos/{id}", s.inspectVideo)
}

// timePtr is t in UTC, or nil for the zero time and for Unix ns 0.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() || t.UnixNano() == 0 {
		return nil
	}
	u := t.UTC()
	return &u
}

func nsPtr(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	return timePtr(time.Unix(0, ns))
}

func (s *server) queue(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			apierr.Write(w, r, apierr.Invalid("limit", "limit must be a whole number from 1 to 1000"))
			return
		}
		limit = n
	}
	apierr.WriteJSON(w, http.StatusOK, QueueView(s.cfg.FSM, r.URL.Query().Get("account"), limit))
}

// QueueView is GET /admin/v1/queue's answer from f: up to limit waiting
// videos of one account ("" for all), oldest first.
func QueueView(f *fsm.FSM, account string, limit int) QueueJSON {
	q := f.Queue(account, limit)
	out := QueueJSON{UnfinishedVideos: q.Unfinished, ReadyTasks: q.ReadyTasks, Waiting: []WaitingJSON{}, HasMore: q.HasMore}
	for _, v := range q.Videos {
		wj := WaitingJSON{VideoID: v.ID, AccountID: v.AccountID, Status: v.Status, Mode: v.Spec.Mode, Model: v.Spec.Model,
			QueuePosition: v.QueuePosition, Reason: v.WaitReason, Message: v.WaitMessage, CreatedAt: time.Unix(0, v.CreatedAt).UTC(),
			Task: v.Task.Name, Kind: string(v.Task.Kind), Failures: v.Task.Failures}
		if v.Task.Name != "" {
			wj.WaitingSince = timePtr(v.Task.ReadyAt)
			if v.Task.Retry != nil {
				wj.RetryAt, wj.LastFailure = timePtr(v.Task.Retry.At), v.Task.Retry.LastFailure
			}
		}
		out.Waiting = append(out.Waiting, wj)
	}
	return out
}

func (s *server) inspectVideo(w http.ResponseWriter, r *http.Request) {
	out, ok := VideoView(s.cfg.FSM, chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("video"))
		return
	}
	apierr.WriteJSON(w, http.StatusOK, out)
}

// VideoView is video id of f with its task graph, as GET
// /admin/v1/videos/{id} answers it; false when there is no such video.
func VideoView(f *fsm.FSM, id string) (VideoInspectJSON, bool) {
	g, ok := f.VideoGraph(id)
	if !ok {
		return VideoInspectJSON{}, false
	}
	out := VideoInspectJSON{VideoID: g.ID, AccountID: g.AccountID, Status: g.Status, Mode: g.Spec.Mode, Model: g.Spec.Model,
		Percent: g.Percent, QueuePosition: g.QueuePosition, Reason: g.WaitReason, Message: g.WaitMessage,
		CreditsCharged: g.CreditsCharged, CreditsRefunded: g.CreditsRefunded, RefundedCredits: g.Refunded(), Error: g.ErrorMessage,
		CreatedAt: time.Unix(0, g.CreatedAt).UTC(), StartedAt: nsPtr(g.StartedAt), FinishedAt: nsPtr(g.FinishedAt),
		Tasks: make([]TaskJSON, 0, len(g.Tasks)), Timings: make([]TimingJSON, 0, len(g.Timings))}
	for _, t := range g.Tasks {
		out.Tasks = append(out.Tasks, taskView(t))
	}
	for _, t := range g.Timings {
		out.Timings = append(out.Timings, TimingJSON{Kind: t.Kind, Model: t.Model, GPU: t.GPU, Seconds: float64(t.Millis) / 1000})
	}
	return out, true
}

func taskView(t scheduler.TaskRecord) TaskJSON {
	tj := TaskJSON{Name: t.Name, Kind: string(t.Kind), State: string(t.State), Deps: t.Deps, Model: t.Req.Model, GPUs: t.Req.GPUs,
		Attempts: t.Attempts, Failures: t.Failures, FailedNodes: t.FailedNodes, Percent: t.Percent, DoneNode: t.DoneNode}
	if t.State == scheduler.TaskReady {
		tj.ReadySince = timePtr(t.ReadyAt)
	}
	if t.Retry != nil {
		tj.RetryAt, tj.LastFailure = timePtr(t.Retry.At), t.Retry.LastFailure
	}
	if l := t.Lease; l != nil {
		tj.Node, tj.Leased, tj.LeaseDeadline = l.NodeID, timePtr(l.GrantedAt), timePtr(l.Deadline)
	}
	return tj
}
