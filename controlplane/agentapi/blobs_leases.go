package agentapi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/scheduler"
)

// What one lease may upload, and what becomes of it when the lease ends.
//
// A lease holder may PUT any file name under its task's prefix, and only
// the completion says which of them are artifacts; nothing else would ever
// delete the rest, so one node could fill the control plane's disk, 2 GiB
// at a time. Two rules bound that:
//
//   - A cap per lease: at most leaseBlobFiles distinct files, because a
//     completion lists no more artifacts than that (maxArtifacts), so any
//     more could never be used; and at most leaseBlobFactor times
//     Config.MaxBlobBytes in all, room for the largest legitimate set (a
//     composite's two full-length videos with captions) and little else.
//     Uploading a name again replaces it and counts once.
//   - Deletion when the lease ends: once the task holds no lease (it
//     completed, failed or expired, or its video ended), every file it
//     uploaded that its owner's record does not refer to is deleted
//     (fsm.FSM.KeptBlobs: the video's artifacts, the avatar's picture, the
//     sample's audio). A failed attempt's files go with it: the next
//     attempt uploads its own.
//
// The ledger of uploads lives in the memory of the member that took them,
// the leader (followers forward agent requests), and not in the FSM:
// replicating each PUT would put a command in the log per file for a record
// that only matters until the lease ends. The price is that a leader that
// stops between an upload and the end of its lease forgets that upload,
// which then stays in the store, within the cap of one lease.
//
// The sweeper is a goroutine per server that runs only while some upload is
// in the ledger. It looks again whenever the Notifier says the farm changed
// (task reports and lease expiry call it) and every Config.LeaseRetry for
// what no Notify announced, such as a video canceled through the public API.
// A server without uploads holds neither a goroutine nor a ledger
// (server.uploads is nil).
const (
	leaseBlobFiles  = maxArtifacts
	leaseBlobFactor = 3
)

// sweepDeleteTimeout bounds one delete of the sweeper.
const sweepDeleteTimeout = 10 * time.Second

// ledger is what the leases of one server uploaded, by task id.
type ledger struct {
	mu    sync.Mutex
	tasks map[string]*taskUploads
	// closed is set, under mu, when the sweeper leaves and takes the
	// ledger off the server; an upload that meets it takes a new one.
	closed bool
}

// taskUploads is what the leases of one task uploaded.
type taskUploads struct {
	owner    string                   // the leased video: a video, an avatar or a speech sample
	leases   map[uint64]*leaseUploads // by lease token
	inFlight int                      // PUTs under way: the sweeper leaves the task alone
	// swept is set while the sweeper deletes the task's files, and closed
	// when it is done: an upload of the task waits for it, so that a file
	// the next lease puts is never one the sweeper deletes.
	swept chan struct{}
}

// leaseUploads is what one lease uploaded.
type leaseUploads struct {
	size     map[string]int64 // stored key → bytes
	pending  map[string]int   // key → PUTs of it under way
	reserved int64            // bytes the PUTs under way may still store
}

// files is how many distinct keys the lease stored or is storing.
func (lu *leaseUploads) files() int {
	if lu == nil {
		return 0
	}
	n := len(lu.size)
	for k := range lu.pending {
		if _, ok := lu.size[k]; !ok {
			n++
		}
	}
	return n
}

// has reports whether the lease stored or is storing key.
func (lu *leaseUploads) has(key string) bool {
	if lu == nil {
		return false
	}
	_, ok := lu.size[key]
	return ok || lu.pending[key] > 0
}

// used is how many bytes the lease stored or may still store.
func (lu *leaseUploads) used() int64 {
	if lu == nil {
		return 0
	}
	n := lu.reserved
	for _, b := range lu.size {
		n += b
	}
	return n
}

// upload is one PUT the ledger counts.
type upload struct {
	task    string
	l       *ledger
	tu      *taskUploads
	lu      *leaseUploads
	key     string
	reserve int64
	// limit is the most this PUT may store: the blob limit, or less when
	// the lease's byte cap is nearer.
	limit int64
}

// leaseBytes is the most one lease may have stored at once.
func (s *server) leaseBytes() int64 { return leaseBlobFactor * s.cfg.MaxBlobBytes }

// ledger returns the server's ledger, locked, making it (and starting its
// sweeper) when there is none.
func (s *server) ledger() *ledger {
	for {
		l := s.uploads.Load()
		if l == nil {
			l = &ledger{tasks: map[string]*taskUploads{}}
			if !s.uploads.CompareAndSwap(nil, l) {
				continue
			}
			go s.sweepUploads(l)
		}
		l.mu.Lock()
		if !l.closed {
			return l
		}
		l.mu.Unlock()
	}
}

// beginUpload counts a PUT of key (length bytes, -1 when unknown) under the
// lease t holds, or refuses it when it would take the lease past its cap.
// The caller has checked that the request carries that lease, and calls
// end once the PUT is over.
func (s *server) beginUpload(ctx context.Context, t scheduler.Task, key string, length int64) (*upload, *apierr.Error) {
	for {
		l := s.ledger()
		tu := l.tasks[t.ID]
		if tu != nil && tu.swept != nil {
			done := tu.swept
			l.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError, "the upload was abandoned; retry it")
				e.RetryAfter = 1
				return nil, e
			}
		}
		var lu *leaseUploads
		if tu != nil {
			lu = tu.leases[t.Lease.Token]
		}
		limit := min(s.cfg.MaxBlobBytes, s.leaseBytes()-lu.used()+lu.sizeOf(key))
		switch {
		case !lu.has(key) && lu.files() >= leaseBlobFiles:
			l.mu.Unlock()
			return nil, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
				fmt.Sprintf("this lease of task %s has uploaded %d files, the most one lease may (a completion lists at most %d artifacts); upload again under a name it already used, or complete the task", t.ID, leaseBlobFiles, maxArtifacts)).
				With("max_files", leaseBlobFiles)
		case limit <= 0 || length > limit:
			l.mu.Unlock()
			return nil, s.leaseFull(t.ID)
		}
		if tu == nil {
			tu = &taskUploads{owner: t.VideoID, leases: map[uint64]*leaseUploads{}}
			l.tasks[t.ID] = tu
		}
		if lu == nil {
			lu = &leaseUploads{size: map[string]int64{}, pending: map[string]int{}}
			tu.leases[t.Lease.Token] = lu
		}
		u := &upload{task: t.ID, l: l, tu: tu, lu: lu, key: key, reserve: limit, limit: limit}
		if length >= 0 {
			u.reserve = length
		}
		lu.pending[key]++
		lu.reserved += u.reserve
		tu.inFlight++
		l.mu.Unlock()
		return u, nil
	}
}

// sizeOf is how many bytes the lease stored under key: a PUT of it again
// replaces them.
func (lu *leaseUploads) sizeOf(key string) int64 {
	if lu == nil {
		return 0
	}
	return lu.size[key]
}

// end records how the PUT went: size bytes stored under the key, or nothing.
func (u *upload) end(size int64, stored bool) {
	u.l.mu.Lock()
	defer u.l.mu.Unlock()
	u.lu.reserved -= u.reserve
	if u.lu.pending[u.key]--; u.lu.pending[u.key] <= 0 {
		delete(u.lu.pending, u.key)
	}
	if stored {
		u.lu.size[u.key] = size
	}
	u.tu.inFlight--
}

// tooLarge is the refusal of a body past the PUT's limit: the blob limit,
// or the lease's byte cap when that was nearer.
func (u *upload) tooLarge(s *server) *apierr.Error {
	if u.limit < s.cfg.MaxBlobBytes {
		return s.leaseFull(u.task)
	}
	return tooLarge(s.cfg.MaxBlobBytes)
}

// leaseFull refuses an upload that would take a lease of task past its byte cap.
func (s *server) leaseFull(task string) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
		fmt.Sprintf("this upload would take the lease of task %s past %d bytes, the most one lease may store (%d times the blob limit); upload again under a name it already used, or complete the task", task, s.leaseBytes(), leaseBlobFactor)).
		With("max_lease_bytes", s.leaseBytes())
}

// sweepUploads deletes what ended leases uploaded and no record refers to,
// until the ledger is empty; then it closes the ledger and returns.
func (s *server) sweepUploads(l *ledger) {
	tick := time.NewTicker(s.cfg.LeaseRetry)
	defer tick.Stop()
	for {
		changed := s.notify.Changed() // before looking, so a change meanwhile is not missed
		if s.sweepEnded(l) {
			return
		}
		select {
		case <-changed:
		case <-tick.C:
		}
	}
}

// sweepEnded sweeps the tasks that hold no lease and have no PUT under
// way; it reports whether the ledger was empty, and so closed.
func (s *server) sweepEnded(l *ledger) bool {
	type due struct {
		id string
		tu *taskUploads
	}
	var ended []due
	l.mu.Lock()
	if len(l.tasks) == 0 {
		l.closed = true
		s.uploads.CompareAndSwap(l, nil)
		l.mu.Unlock()
		return true
	}
	for id, tu := range l.tasks {
		if tu.inFlight > 0 || tu.swept != nil {
			continue
		}
		// Under l.mu, so an upload of the task either counted itself
		// before this look or waits for swept.
		if t, ok := s.fsm.Task(id); ok && t.Lease != nil {
			continue
		}
		tu.swept = make(chan struct{})
		ended = append(ended, due{id, tu})
	}
	l.mu.Unlock()
	for _, d := range ended {
		left := s.deleteUnlisted(d.id, d.tu)
		l.mu.Lock()
		if len(left) == 0 {
			delete(l.tasks, d.id)
		} else {
			// The store refused some deletes: try them again next time.
			d.tu.leases = map[uint64]*leaseUploads{0: {size: left, pending: map[string]int{}}}
		}
		close(d.tu.swept)
		d.tu.swept = nil
		l.mu.Unlock()
	}
	return false
}

// deleteUnlisted deletes the files the ended leases of task id uploaded
// that its owner's record does not refer to, and returns those it could
// not delete. The caller holds tu.swept, so no PUT changes tu meanwhile.
func (s *server) deleteUnlisted(id string, tu *taskUploads) map[string]int64 {
	keep, ok := s.fsm.KeptBlobs(tu.owner)
	if !ok {
		// Nothing says what is safe to delete; a file left is cheaper than
		// a delivery lost.
		s.log.Warn("uploads of a task whose video is unknown are left in place", "task_id", id, "video_id", tu.owner)
		return nil
	}
	gone := map[string]bool{}
	left := map[string]int64{}
	for _, lu := range tu.leases {
		for key, size := range lu.size {
			if keep[key] || gone[key] {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), sweepDeleteTimeout)
			err := s.cfg.Blobs.Delete(ctx, key)
			cancel()
			if err != nil {
				s.log.Warn("delete an upload no completion listed", "task_id", id, "key", key, "err", err)
				s.sweeps.failed.Inc()
				left[key] = size
				continue
			}
			gone[key] = true
			s.sweeps.files.Inc()
			s.sweeps.bytes.Add(float64(max(size, 0)))
		}
	}
	if len(gone) > 0 {
		keys := slices.Sorted(maps.Keys(gone))
		s.log.Info("deleted uploads no completion listed", "task_id", id, "video_id", tu.owner, "count", len(keys), "keys", keys)
	}
	return left
}
