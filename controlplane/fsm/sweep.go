package fsm

import (
	"maps"
	"slices"
)

// Videos finished before the garbage list existed (blobgc.go) kept every
// artifact: plan, narration, scene clips, a manual render's clip. A state
// restored from a snapshot of such a version still holds them, and nothing
// would ever delete them. SweepIntermediates lists them for deletion as
// finishing the video does today: a completed video keeps its deliveries,
// a failed one nothing. The leader proposes it when it takes over and finds
// any (IntermediatesLeft); on a state without leftovers it changes nothing.

// SweepIntermediates moves the intermediate artifacts of finished videos to
// the garbage list.
type SweepIntermediates struct {
	Now int64 `msgpack:"now"`
}

func (*SweepIntermediates) Type() MessageType { return SweepIntermediatesType }

// deliveries are the artifact keys a finished video keeps.
func (v *Video) deliveries() []string {
	if v.Status != StatusCompleted {
		return nil
	}
	o := v.Outputs
	return []string{o.Video, o.VideoNoCaptions, o.Captions, o.CaptionsSRT, o.Poster}
}

// leftovers reports whether v is finished and holds an artifact that is
// not one of its deliveries.
func (v *Video) leftovers() bool {
	if v.Status != StatusCompleted && v.Status != StatusFailed {
		return false
	}
	keep := v.deliveries()
	for _, key := range v.Artifacts {
		if !isDelivery(key, keep) {
			return true
		}
	}
	return false
}

// applySweepIntermediates returns how many keys it listed. Videos are
// visited in id order, so every replica appends the same list.
func (s *state) applySweepIntermediates(*SweepIntermediates) (any, error) {
	before := len(s.garbage)
	for _, id := range slices.Sorted(maps.Keys(s.videos)) {
		if v := s.videos[id]; v.leftovers() {
			s.collectIntermediates(v, v.deliveries()...)
		}
	}
	return len(s.garbage) - before, nil
}

// IntermediatesLeft reports whether a finished video still holds
// intermediate artifacts, so that the leader proposes SweepIntermediates
// only then.
func (f *FSM) IntermediatesLeft() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, v := range f.s.videos {
		if v.leftovers() {
			return true
		}
	}
	return false
}
