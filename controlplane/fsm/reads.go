package fsm

import (
	"math"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Reads. Each takes the read lock and returns copies the caller may keep and change.

// QueuedVideo is a video with where it stands in the render farm: its place in
// the queue (0 when not waiting), why it waits, and its percent while processing.
type QueuedVideo struct {
	Video
	QueuePosition uint64
	// WaitReason is a stable code (scheduler.Reason) and WaitMessage its text.
	WaitReason  string
	WaitMessage string
	// Stage is the step a processing video is at (scheduler.Stage*), with
	// an auto video's scenes done and in all.
	Stage                   string
	ScenesDone, ScenesTotal int
	// Wait is the estimate of a queued video's wait (EstimateWait), set by
	// reads that ask for it; nil when not asked.
	Wait *WaitEstimate
}

// WaitEstimate is how long a queued video may wait before it starts to
// render, in seconds; Known is false when nothing can tell (no live node
// can run it, or too few of its kind finished lately).
type WaitEstimate struct {
	Known    bool
	P50, P90 int64
}

// EstimateWait estimates how long the queued video waits at now (Unix ns):
// scheduler.State.EstimateWait, rounded up to whole seconds. Not a command's
// answer: the throughput it reads is not replicated (each node counts the
// completions it applied since it started).
func (f *FSM) EstimateWait(videoID string, now int64) WaitEstimate {
	f.mu.RLock()
	defer f.mu.RUnlock()
	est, ok := f.s.sched.EstimateWait(videoID, timeOf(now))
	if !ok {
		return WaitEstimate{}
	}
	secs := func(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }
	return WaitEstimate{Known: true, P50: secs(est.P50), P90: secs(est.P90)}
}

// queued adds the scheduler's view to a copy of v.
func (s *state) queued(v *Video) QueuedVideo {
	q := s.progress(v)
	pct := q.Percent
	q.Video = v.Clone()
	q.Percent = pct
	return q
}

// progress is v's status and progress in a QueuedVideo whose Video holds
// only its id, Status and Percent: what a watcher compares (watch.go).
func (s *state) progress(v *Video) QueuedVideo {
	q := QueuedVideo{Video: Video{ID: v.ID, Status: v.Status, Percent: v.Percent}}
	if v.Status != StatusQueued && v.Status != StatusProcessing {
		return q
	}
	st, err := s.sched.VideoStatus(v.ID)
	if err != nil {
		return q
	}
	q.QueuePosition = uint64(max(st.QueuePosition, 0))
	q.WaitReason, q.WaitMessage = string(st.Reason), st.Message
	q.Percent = st.Percent
	q.Stage, q.ScenesDone, q.ScenesTotal = st.Stage, st.ScenesDone, st.ScenesTotal
	return q
}

// KeyByHash finds the API key whose secret hashes to h.
func (f *FSM) KeyByHash(h [32]byte) (Key, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	id, ok := f.s.keyByHash[h]
	if !ok {
		return Key{}, false
	}
	return *f.s.keys[id], true
}

// Key returns the API key with that id.
func (f *FSM) Key(id string) (Key, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k, ok := f.s.keys[id]
	if !ok {
		return Key{}, false
	}
	return *k, true
}

// Account returns the account with that id.
func (f *FSM) Account(id string) (Account, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a, ok := f.s.accounts[id]
	if !ok {
		return Account{}, false
	}
	return *a, true
}

// Video returns the video if it belongs to the account; another account's video is
// reported as not found, never as forbidden.
func (f *FSM) Video(accountID, id string) (QueuedVideo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, _, ok := f.s.lookupVideo(id)
	if !ok || (accountID != "" && v.AccountID != accountID) {
		return QueuedVideo{}, false
	}
	return f.s.queued(v), true
}

// VideoFilter selects videos of one account for a listing.
type VideoFilter struct {
	Status   string
	FolderID string
	Limit    int
	// StartingAfter continues a listing after this video id (newest first).
	StartingAfter string
}

// VideoPage is one page of a listing, newest first.
type VideoPage struct {
	Videos  []QueuedVideo
	Total   int // every video of the account matching the filter
	HasMore bool
}

// ListVideos lists an account's videos, newest first. A StartingAfter id that is
// not the account's gives ErrVideoNotFound. It reads the list of the filter
// (tiers.go) from where the page starts, and the total from counts, so its
// cost does not grow with the account's history.
func (f *FSM) ListVideos(accountID string, flt VideoFilter) (VideoPage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var bound uint64
	if flt.StartingAfter != "" {
		v, seq, ok := f.s.lookupVideo(flt.StartingAfter)
		if !ok || v.AccountID != accountID {
			return VideoPage{}, ErrVideoNotFound
		}
		bound = seq
	}
	list, count := filterTag(flt.Status, flt.FolderID)
	page := VideoPage{Total: f.s.countVideos(accountID, count)}
	f.s.eachVideo(accountID, list, true, bound, func(v *Video, _ uint64) bool {
		if flt.Status != "" && v.Status != flt.Status {
			return true
		}
		if len(page.Videos) == flt.Limit {
			page.HasMore = true
			return false
		}
		page.Videos = append(page.Videos, f.s.queued(v))
		return true
	})
	return page, nil
}

// Folders lists an account's folders in creation order.
func (f *FSM) Folders(accountID string) []Folder {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountFolders[accountID]
	out := make([]Folder, 0, len(ids))
	for _, id := range ids {
		out = append(out, *f.s.folders[id])
	}
	return out
}

// Folder returns the folder if it belongs to the account.
func (f *FSM) Folder(accountID, id string) (Folder, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fo, ok := f.s.folders[id]
	if !ok || fo.AccountID != accountID {
		return Folder{}, false
	}
	return *fo, true
}

// Stats counts what the state holds, for metrics and status pages.
type Stats struct {
	// Events and Deliveries are the webhook outbox's records kept.
	Events, Deliveries int
	// LoggedEvents are the event log's (eventlog.go).
	LoggedEvents int
	Accounts     int
	Keys         int
	Videos       int
	Queued       int
	Idempotency  int
	Nodes        int
	Garbage      int // intermediate blobs waiting for the leader to delete them
	Retrying     int // tasks waiting out a backoff after a failure
	ByStatus     map[string]int
}

// Stats returns counts of the state's records.
func (f *FSM) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := Stats{
		Accounts: len(f.s.accounts), Keys: len(f.s.keys),
		Idempotency: f.s.idem.n, Events: f.s.events.n, Deliveries: f.s.deliveries.n, LoggedEvents: f.s.eventLog.n, ByStatus: f.s.videosByStatus(), Nodes: len(f.s.nodes), Garbage: len(f.s.garbage),
		Retrying: f.s.sched.Stats().RetryingTasks,
	}
	for _, n := range st.ByStatus {
		st.Videos += n
	}
	st.Queued = st.ByStatus[StatusQueued]
	return st
}

// IdempotencyReplays reports whether a create with this key and body hash, at time
// now, would replay a remembered answer rather than create anything. The API uses
// it to let retries through the creation rate limit; the create command decides.
func (f *FSM) IdempotencyReplays(accountID, key string, bodyHash [32]byte, now int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	rec, ok := f.s.idem.get(idemID(accountID, key))
	return ok && rec.CreatedAt+IdempotencyTTL > now && rec.BodyHash == bodyHash
}

// NodeByCredHash finds the node whose credential hashes to h.
func (f *FSM) NodeByCredHash(h [32]byte) (Node, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	id, ok := f.s.nodeByCred[h]
	if !ok {
		return Node{}, false
	}
	return *f.s.nodes[id], true
}

// Nodes lists the registered nodes with what the scheduler knows of them, by id.
func (f *FSM) Nodes() []NodeView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]NodeView, 0, len(f.s.nodes))
	for _, info := range f.s.sched.Nodes() {
		if n, ok := f.s.nodes[info.ID]; ok {
			out = append(out, NodeView{Node: *n, Info: info})
		}
	}
	return out
}

// NodeInfo returns the scheduler's view of node id (its GPUs, slots and
// leases), as Nodes does for all of them.
func (f *FSM) NodeInfo(id string) (scheduler.NodeInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.sched.Node(id)
}

// NodeView is a registered node and its scheduler view.
type NodeView struct {
	Node Node
	Info scheduler.NodeInfo
}

// Task returns a scheduler task by id.
func (f *FSM) Task(id string) (scheduler.Task, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.sched.Task(id)
}

// ExpiryDue reports whether an ExpireLeases at now would change anything.
func (f *FSM) ExpiryDue(now int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.sched.ExpiryDue(timeOf(now))
}

// HasReadyWork reports whether any task waits for placement; lease polls skip
// proposing (and writing to the log) while nothing does.
func (f *FSM) HasReadyWork() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.sched.ReadyTasks() > 0
}
