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
	if !finished(v) {
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
func (s *state) applySweepIntermediates(*SweepIntermediates) (int, error) {
	before := len(s.garbage)
	// In id order, whichever tier each video is in, so every replica lists
	// the same keys in the same order.
	ids := slices.Collect(maps.Keys(s.diskLeftovers))
	for id, v := range s.videos {
		if v.leftovers() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		v, seq, ok := s.lookupVideo(id)
		if !ok || !v.leftovers() {
			continue
		}
		// A copy: the one in memory may be on its way to disk (tiers.go).
		c := v.Clone()
		s.collectIntermediates(&c, c.deliveries()...)
		if _, inMem := s.videos[id]; inMem {
			s.videos[id] = &c
			s.touch(&c)
		} else {
			s.keepVideo(&c, seq)
		}
		delete(s.diskLeftovers, id)
	}
	return len(s.garbage) - before, nil
}

// IntermediatesLeft reports whether any finished video still holds
// intermediate artifacts.
func (f *FSM) IntermediatesLeft() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.s.diskLeftovers) > 0 {
		return true
	}
	for _, v := range f.s.videos {
		if v.leftovers() {
			return true
		}
	}
	return false
}
