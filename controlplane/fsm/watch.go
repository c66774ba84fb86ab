package fsm

import (
	"encoding/binary"
	"hash/fnv"
	"sync"
)

// Watching videos for event streams (GET /v1/videos/{id}/events).
//
// A stream needs each change of a video's status, stage, percent, queue
// position or wait reason, named by an id every node agrees on, so that a
// client may resume on another node after a leader change. The id is the
// Raft index of the entry after which the video showed the change: after
// every applied command the FSM looks at the videos some stream on this node
// follows (only those: the cost is one status read per followed video per
// entry, not a scan of the state), and records a Change when what a watcher
// sees differs from the last one. Every node applies the same entries to the
// same state, so every node that follows a video finds the same changes at
// the same indexes, whatever its batching or its timing.
//
// Nothing here is replicated state: it lives beside the FSM, under its lock
// while an entry is applied, and changes nothing Apply returns or snapshots.
// Streams read it under the watch's own lock, never the FSM's, so no write
// to a client ever holds an apply up.

// ChangeHistory is how many changes of a followed video are kept for
// resuming streams: a stream that fell further behind resyncs from the
// latest one.
const ChangeHistory = 64

// Change is one change of a followed video.
type Change struct {
	// Index is the Raft index of the entry after which the video was so.
	Index uint64
	// Sum fingerprints what a watcher sees (status, stage, scenes,
	// percent, queue position, reason): equal sums, equal states.
	Sum uint32
	// Video is the video as it was after entry Index; read only.
	Video QueuedVideo

	encOnce sync.Once
	enc     []byte
}

// Encoded returns enc(c), computed by the first caller only: ten thousand
// streams of one video encode each change once.
func (c *Change) Encoded(enc func(*Change) []byte) []byte {
	c.encOnce.Do(func() { c.enc = enc(c) })
	return c.enc
}

// Final reports whether the change is a final state: a video completed,
// failed or canceled changes no more.
func (c *Change) Final() bool { return finalStatus(c.Video.Status) }

func finalStatus(s string) bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCanceled
}

// Followed is one video that streams on this node follow, with its recent
// changes.
type Followed struct {
	id string
	// since is the index at which this node began to follow the video: it
	// knows every change after it.
	since   uint64
	ring    [ChangeHistory]*Change
	n       uint64 // changes recorded; the latest is ring[(n-1)%len]
	streams map[*Subscription]struct{}
	// The latest change's sum and finality, kept here so that the look
	// after every entry reads no Change (thousands of them are cold).
	lastSum uint32
	final   bool
}

// Subscription is one stream's hold on a followed video. Wake receives a
// value (never blocking the apply) when the video changed; the stream then
// reads what it has not sent with Since.
type Subscription struct {
	Wake chan struct{}
	w    *videoWatch
	f    *Followed
}

// videoWatch holds the followed videos of this node.
type videoWatch struct {
	mu     sync.Mutex
	videos map[string]*Followed
	// onChange, when set, is told of every change recorded (for metrics and
	// benchmarks); it runs under the FSM's lock and must be quick.
	onChange func(*Change)
}

// OnVideoChange sets fn to be told of every change of a followed video, under
// the FSM's lock (quick, and without reading the FSM). Call it before streams
// start.
func (f *FSM) OnVideoChange(fn func(*Change)) {
	f.watch.mu.Lock()
	f.watch.onChange = fn
	f.watch.mu.Unlock()
}

// Follow subscribes to the video id of accountID (any account when empty):
// false when there is no such video of the account. The subscription starts
// with the video as the FSM now holds it (a Change at the current applied
// index, or the latest recorded one when the video was followed already).
// Close the subscription when the stream ends.
func (f *FSM) Follow(accountID, id string) (*Subscription, bool) {
	w := &f.watch
	// The read lock keeps applies out between reading the video and
	// registering the subscription, so no change falls between the two.
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, _, ok := f.s.lookupVideo(id)
	if !ok || (accountID != "" && v.AccountID != accountID) {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fv := w.videos[id]
	if fv == nil {
		if w.videos == nil {
			w.videos = map[string]*Followed{}
		}
		fv = &Followed{id: id, since: f.applied, streams: map[*Subscription]struct{}{}}
		q := f.s.queued(v)
		fv.record(&Change{Index: f.applied, Sum: watchSum(&q), Video: q})
		w.videos[id] = fv
	}
	sub := &Subscription{Wake: make(chan struct{}, 1), w: w, f: fv}
	fv.streams[sub] = struct{}{}
	return sub, true
}

// Close ends the subscription; the video is no longer followed once its
// last stream has gone.
func (s *Subscription) Close() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	delete(s.f.streams, s)
	if len(s.f.streams) == 0 && s.w.videos[s.f.id] == s.f {
		delete(s.w.videos, s.f.id)
	}
}

// Latest is the video's latest change.
func (s *Subscription) Latest() *Change {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.f.latest()
}

// Since returns the changes after index, oldest first. complete is false when
// this node cannot list them all: it began to follow the video after index,
// or older changes than the ones kept came after index. Latest is then what
// the stream resyncs from.
func (s *Subscription) Since(index uint64) (changes []*Change, complete bool) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	f := s.f
	if index < f.since {
		return nil, false
	}
	kept := min(f.n, ChangeHistory)
	for i := f.n - kept; i < f.n; i++ {
		c := f.ring[i%ChangeHistory]
		if c.Index > index {
			changes = append(changes, c)
		}
	}
	// The oldest kept change must be at or before index, or one between
	// may have been dropped.
	if len(changes) == int(kept) && f.n > ChangeHistory {
		return nil, false
	}
	return changes, true
}

func (f *Followed) latest() *Change { return f.ring[(f.n-1)%ChangeHistory] }

func (f *Followed) record(c *Change) {
	f.ring[f.n%ChangeHistory] = c
	f.n++
	f.lastSum, f.final = c.Sum, c.Final()
}

// quietTypes are the commands that change no video's status, progress,
// queue position or wait reason (webhooks, keys, credits, assets, members):
// after them the watch reads nothing. A type not listed is read after, so a
// new command is safe by default.
var quietTypes = func() (q [256]bool) {
	for _, t := range []MessageType{CreateKeyType, RevokeKeyType, GrantCreditsType, CreateFolderType,
		ExpireIdempotencyType, CreateWebhookType, DeleteWebhookType, RecordDeliveryType, PruneDeliveriesType,
		CreateAssetType, CompleteAssetType, DeleteAssetType, CreateBrandKitType, DeleteBrandKitType,
		SetAppExportType, TrimExportedType, DebitCreditsType, SetMemberType, RemoveMemberType,
		BlobsDeletedType, ResealWebhookType, RetryDeliveryType, SendTestEventType, RotateWebhookSecretType,
		DisableWebhookType, EnableWebhookType} {
		q[t] = true
	}
	return q
}()

// watchScope names the one video an applied command can have changed, when
// the command says so: a task's percent report (TaskProgress, the most
// frequent command of a busy farm) moves its own video's percent and nothing
// of the queue. ok is false when any followed video may have changed.
func (s *state) watchScope(c Command) (videoID string, ok bool) {
	p, isProgress := c.(*TaskProgress)
	if !isProgress {
		return "", false
	}
	if t, found := s.sched.Task(p.TaskID); found {
		return t.VideoID, true
	}
	return "", true // no such task: nothing changed
}

// afterEntry looks at the followed videos after the entry at index, command
// c, was applied (under the FSM's write lock) and records what changed.
func (w *videoWatch) afterEntry(index uint64, c Command, s *state) {
	if quietTypes[c.Type()] {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.videos) == 0 {
		return
	}
	if id, ok := s.watchScope(c); ok {
		if fv := w.videos[id]; fv != nil {
			w.look(index, id, fv, s)
		}
		return
	}
	// Many statuses of one unchanging state: the scheduler may rank the
	// queues once for all of them.
	s.sched.BeginStatusBatch()
	defer s.sched.EndStatusBatch()
	for id, fv := range w.videos {
		w.look(index, id, fv, s)
	}
}

// look records a change of followed video id after entry index, if any.
func (w *videoWatch) look(index uint64, id string, fv *Followed, s *state) {
	if fv.final {
		return
	}
	v, _, ok := s.lookupVideo(id)
	if !ok {
		return
	}
	// The status alone first: cloning the video is for changes only.
	p := s.progress(v)
	sum := watchSum(&p)
	if sum == fv.lastSum {
		return
	}
	q := s.queued(v)
	c := &Change{Index: index, Sum: sum, Video: q}
	fv.record(c)
	if w.onChange != nil {
		w.onChange(c)
	}
	for sub := range fv.streams {
		select {
		case sub.Wake <- struct{}{}:
		default: // already woken: it reads every change when it runs
		}
	}
}

// watchSum fingerprints what a watcher of q sees change.
func watchSum(q *QueuedVideo) uint32 {
	h := fnv.New32a()
	for _, s := range []string{q.Status, q.Stage, q.WaitReason, q.WaitMessage} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	var b [8]byte
	for _, n := range []uint64{uint64(q.Percent), q.QueuePosition, uint64(q.ScenesDone), uint64(q.ScenesTotal)} {
		binary.BigEndian.PutUint64(b[:], n)
		_, _ = h.Write(b[:])
	}
	return h.Sum32()
}
