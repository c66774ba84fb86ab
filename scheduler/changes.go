package scheduler

import (
	"maps"
	"slices"
)

// A control plane that keeps the scheduler's state in a file writes, at each
// checkpoint, only the videos whose record changed since the last one, so a
// checkpoint costs what changed rather than the whole queue. TrackChanges
// turns that bookkeeping on; every change to a video or its tasks goes
// through one of the few functions that call changed (submit, the queue,
// leases, progress, retries, completion, cancel, forget), and the property
// test rebuilds the video records from the changes alone and compares them
// with a full Snapshot after every command.
//
// The set is off by default: the simulator and a state that never writes a
// file would only grow it.

// TrackChanges starts recording which videos change. It is idempotent;
// a State made by New, Restore or Clone does not track.
func (s *State) TrackChanges() {
	if s.changedVideos == nil {
		s.changedVideos = map[Changed]struct{}{}
	}
}

// Changed names a video whose record changed: its id and its sequence
// number, by which a file keeps the record in submission order (so a
// checkpoint's writes append). A video submitted again under its id (a
// preview rendered in full) changes under both numbers.
type Changed struct {
	ID  string
	Seq uint64
}

// TakeChanged returns, in no particular order, the videos whose record
// changed since the last call (or since TrackChanges), and forgets them. A
// video that was forgotten meanwhile is among them: VideoRecord then reports
// it gone, or under another Seq when it was submitted again. It runs while
// the control plane holds its state still, so it leaves sorting to the
// writer.
func (s *State) TakeChanged() []Changed {
	if len(s.changedVideos) == 0 {
		return nil
	}
	out := slices.Collect(maps.Keys(s.changedVideos))
	if len(out) > takeKeepsMap {
		// A map does not shrink: cleared, one that held a checkpoint
		// interval's backlog is still walked whole by every later take
		// (20 µs a take at 16,384 against 2.5 µs; BenchmarkTakeChanged).
		s.changedVideos = map[Changed]struct{}{}
	} else {
		clear(s.changedVideos)
	}
	return out
}

// takeKeepsMap is the most videos a take may return and still keep its map:
// walking a map of this size costs what a take of it does anyway.
const takeKeepsMap = 256

// VideoRecord returns the snapshot record of one video, as Snapshot would
// write it, and false if the video is not (or no longer) in the state.
func (s *State) VideoRecord(id string) (VideoRecord, bool) {
	v, ok := s.videos[id]
	if !ok {
		return VideoRecord{}, false
	}
	return v.record(), true
}

// SnapshotHeader is Snapshot without its videos: what is small and changes
// with every command (counters, accounts, nodes). With the records of every
// video, sorted by Seq, in Videos, it is the Snapshot.
func (s *State) SnapshotHeader() Snapshot {
	return s.snapshot(false)
}

func (s *State) changed(v *video) {
	if s.changedVideos != nil {
		s.changedVideos[Changed{v.id, v.seq}] = struct{}{}
	}
}

// ChangedCount is how many videos changed since the last TakeChanged.
func (s *State) ChangedCount() int { return len(s.changedVideos) }
