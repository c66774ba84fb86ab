package fsm

import (
	"maps"
	"slices"
)

// Intermediate blobs. A video's tasks leave files in the blob store for the
// tasks after them (plan.json, narration, scene clips, a manual render's
// clip); once the video is finished only its deliveries are served, so the
// command that finishes it moves every other artifact key into the garbage
// list, in key order. The leader deletes those blobs and proposes
// BlobsDeleted with the keys it deleted (server: the blob janitor), so a
// key is forgotten only once its blob is gone, and a leader that dies
// halfway leaves the rest to the next one. Deleting a missing blob is not
// an error, so a key deleted twice does no harm.

// recGarbage is the snapshot record of the garbage list (25 is its number).
const recGarbage recordType = 25

// BlobsDeleted forgets garbage keys whose blobs the leader deleted.
type BlobsDeleted struct {
	Keys []string `msgpack:"keys"`
	Now  int64    `msgpack:"now"`
}

func (*BlobsDeleted) Type() MessageType { return BlobsDeletedType }

// garbageRecord is the garbage list in a snapshot.
type garbageRecord struct {
	Keys []string `msgpack:"keys"`
}

// applyBlobsDeleted removes the listed keys from the garbage list; keys not
// in it are ignored. It returns how many it removed.
func (s *state) applyBlobsDeleted(c *BlobsDeleted) (int, error) {
	gone := make(map[string]bool, len(c.Keys))
	for _, k := range c.Keys {
		gone[k] = true
	}
	before := len(s.garbage)
	s.garbage = slices.DeleteFunc(s.garbage, func(k string) bool { return gone[k] })
	return before - len(s.garbage), nil
}

// collectIntermediates moves v's artifacts that are not among keep (its
// deliveries) to the garbage list, in key order so that every replica
// appends the same list, and leaves v with the kept ones.
func (s *state) collectIntermediates(v *Video, keep ...string) {
	kept := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(v.Artifacts)) {
		key := v.Artifacts[name]
		if isDelivery(key, keep) {
			kept[name] = key
			continue
		}
		s.garbage = append(s.garbage, key)
	}
	v.Artifacts = kept
	if len(kept) == 0 {
		v.Artifacts = nil
	}
}

// isDelivery reports whether artifact key is one of keep, a video's deliveries.
func isDelivery(key string, keep []string) bool { return key != "" && slices.Contains(keep, key) }

// Garbage returns up to limit keys of blobs to delete, oldest first, and how
// many there are in all.
func (f *FSM) Garbage(limit int) ([]string, int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := min(limit, len(f.s.garbage))
	return slices.Clone(f.s.garbage[:n]), len(f.s.garbage)
}

// garbageRecords is the garbage list as snapshot records (none when empty).
func (s *state) garbageRecords() []record {
	if len(s.garbage) == 0 {
		return nil
	}
	return []record{{recGarbage, garbageRecord{Keys: slices.Clone(s.garbage)}}}
}

func (s *state) restoreGarbage(body []byte) error {
	r, err := decodeRecord[garbageRecord](body, "garbage list")
	s.garbage = append(s.garbage, r.Keys...)
	return err
}

// KeptBlobs returns the blob keys that the record with id still refers to:
// a video's artifacts (only its deliveries once it is finished), an
// avatar's picture, a speech sample's audio. id is what a task's lease
// names as its video, so these are the keys the agent API must not delete
// when it removes what a lease uploaded and no completion listed. ok is
// false when no record has id; the caller then deletes nothing.
func (f *FSM) KeptBlobs(id string) (keep map[string]bool, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	keep = map[string]bool{}
	if a := f.s.avatars[id]; a != nil {
		if a.Image != "" {
			keep[a.Image] = true
		}
		return keep, true
	}
	if sp := f.s.speech[id]; sp != nil {
		if sp.Audio != "" {
			keep[sp.Audio] = true
		}
		return keep, true
	}
	v, _, ok := f.s.lookupVideo(id)
	if !ok {
		return nil, false
	}
	for _, key := range v.Artifacts {
		keep[key] = true
	}
	return keep, true
}
