package fsm

import (
	"maps"
	"math"
	"slices"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Staging. Raft takes a snapshot on the goroutine that applies entries, so
// everything FSM.Snapshot copies stops every write until it is done. Under
// create load that was the changed videos and task graphs of a whole
// checkpoint interval (about ten thousand of each): 80–130 ms without an
// apply, every two seconds, which set the slowest creates.
//
// So the copies are made ahead, on the apply path: once an interval is half
// over (stageAfter entries since the last snapshot), each apply copies into
// the staged sets every record changed since the previous apply, and up to
// stageBudget per entry it applied of the backlog (what had changed before
// staging began), and takes them out of the dirty sets. A record changed
// again is taken back out of the staged set (touch, or TakeChanged for the
// task graphs), so the next checkpoint copies it afresh; the others it
// takes as staged. Staged entries keep the generation they were staged in
// and are dropped with the dirty ones once a checkpoint of that generation
// is written (clean): a checkpoint that fails, or a snapshot Raft never
// persists, leaves them to the next.
//
// Nothing is staged while a checkpoint is in flight (taken, not yet
// written): the dirty sets then still hold what it writes, which staging
// would copy a second time.

// stageBudget is how many records of the backlog an apply stages per entry
// it applied: a create changes three (its video, its task graph, its event
// in the log), so the backlog of the interval's first half is staged within
// the first three eighths of its second half.
const stageBudget = 4

// stagedVideo is a video copied ahead of a checkpoint.
type stagedVideo struct {
	c    *Video // the copy
	orig *Video // the video in memory when copied (dropWritten)
	seq  uint64
	gen  uint64
	// key is its key in bucketHotVideos, made ahead too: reading the copy
	// for it was most of what the snapshot still spent on staged videos.
	key  []byte
	done bool // finished: it goes to the disk tier
}

// newStagedVideo copies v, whose sequence number is seq.
func newStagedVideo(v *Video, seq, gen uint64) stagedVideo {
	c := v.Clone()
	return stagedVideo{c: &c, orig: v, seq: seq, gen: gen, key: hotVideoKey(v.AccountID, seq), done: finished(v)}
}

// stagedSched is a task graph's write, copied ahead of a checkpoint.
type stagedSched struct {
	w   hotWrite
	gen uint64
}

// stageAllowed reports whether records may be staged now: the state tracks
// changes and no checkpoint is in flight.
func (d *dirty) stageAllowed() bool { return d.tracking() && d.written+1 == d.gen }

// stage copies changed videos and task graphs into the staged sets: every
// one that changed since the last call, and up to budget of those that
// changed before staging began. The caller holds the lock.
//
// Neither the dirty maps nor the scheduler's are walked a few entries at a
// time: a map emptied by deletes is walked in time of its size, not of
// what is left, and that was a quarter of the staging. The keys dirty when
// staging begins are listed once (the backlog); later changes come from the
// scheduler's set and from touch (recent).
func (s *state) stage(budget int) {
	d := &s.dirty
	if !d.stageAllowed() {
		return
	}
	begin := !d.staging
	if begin {
		d.staging = true
		s.takeSchedChanges() // the task graphs changed so far join the backlog too
		d.backlogVideos = slices.AppendSeq(d.backlogVideos[:0], maps.Keys(d.videos))
		d.backlogSched = slices.AppendSeq(d.backlogSched[:0], maps.Keys(d.sched))
	}
	for _, c := range s.sched.TakeChanged() {
		s.stageSched(c)
	}
	stageFrom(&d.recent, math.MaxInt, s.stageVideo)
	budget = stageFrom(&d.backlogSched, budget, func(c scheduler.Changed) bool {
		if _, ok := d.sched[c]; !ok {
			return false // staged already
		}
		s.stageSched(c)
		return true
	})
	budget = stageFrom(&d.backlogVideos, budget, s.stageVideo)
	for _, t := range s.tables() {
		budget = t.stage(d.gen, begin, budget)
	}
}

// stageFrom stages keys from the end of *list through one until budget of
// them were staged (one reports whether it staged its key: a key no longer
// dirty is dropped without counting), and returns what is left of budget.
// Taken keys are cleared, so the list holds no strings it no longer needs.
func stageFrom[K comparable](list *[]K, budget int, one func(K) bool) int {
	l := *list
	for budget > 0 && len(l) > 0 {
		last := len(l) - 1
		if one(l[last]) {
			budget--
		}
		var zero K
		l[last] = zero
		l = l[:last]
	}
	*list = l
	return budget
}

// takeSchedChanges marks dirty the task graphs the scheduler says changed
// since it was last asked, dropping their staged copies.
func (s *state) takeSchedChanges() {
	d := &s.dirty
	for _, c := range s.sched.TakeChanged() {
		d.sched[c] = d.gen
		delete(d.stagedSched, c) // copied before this change
	}
}

// stageSched stages c's task graph.
func (s *state) stageSched(c scheduler.Changed) {
	d := &s.dirty
	d.stagedSched[c] = stagedSched{w: s.schedWrite(c), gen: d.gen}
	delete(d.sched, c)
}

// stageVideo stages the video id if it is dirty, and reports whether it was.
func (s *state) stageVideo(id string) bool {
	d := &s.dirty
	if _, ok := d.videos[id]; !ok {
		return false // staged already, or listed twice
	}
	v, ok := s.videos[id]
	if !ok {
		return false // takeHot reports it
	}
	d.stagedVideos[id] = newStagedVideo(v, s.seqOf[id], d.gen)
	delete(d.videos, id)
	return true
}

// stopStaging ends the staging of an interval: a checkpoint takes the rest.
func (d *dirty) stopStaging() {
	d.staging = false
	clear(d.recent)
	d.recent = d.recent[:0]
	clear(d.backlogVideos)
	d.backlogVideos = d.backlogVideos[:0]
	d.backlogSched = d.backlogSched[:0]
}

// staged reports how many videos and task graphs are staged, for the
// checkpoint's preallocation and tests.
func (d *dirty) staged() int { return len(d.stagedVideos) + len(d.stagedSched) }

// schedWrite is the checkpoint's write of c's task graph: its record, or a
// delete when the video is gone or was submitted again under another number.
func (s *state) schedWrite(c scheduler.Changed) hotWrite {
	w := hotWrite{bucket: bucketHotSched, key: schedKey(c)}
	if r, ok := s.sched.VideoRecord(c.ID); ok && r.Seq == c.Seq {
		w.val = (*schedRecord)(&r)
	}
	return w
}
