package fsm

import (
	"cmp"
	"slices"
)

// Voice is a text-to-speech voice a node offers: one of its espeak-ng's
// voices, as its agent registered it (wire.Voice).
type Voice struct {
	ID       string `msgpack:"id"`
	Name     string `msgpack:"name"`
	Language string `msgpack:"language"`
	Gender   string `msgpack:"gender"`
}

// compareVoices orders voices by id, then by the rest of their description.
func compareVoices(a, b Voice) int {
	return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Language, b.Language), cmp.Compare(a.Gender, b.Gender))
}

// normalizeVoices returns vs sorted by id with later duplicates of an id
// left out, so that a node's record (and the snapshot holding it) does not
// depend on the order its agent listed them in. It returns nil for none.
func normalizeVoices(vs []Voice) []Voice {
	if len(vs) == 0 {
		return nil
	}
	out := slices.Clone(vs)
	slices.SortStableFunc(out, func(a, b Voice) int { return cmp.Compare(a.ID, b.ID) })
	out = slices.CompactFunc(out, func(a, b Voice) bool { return a.ID == b.ID })
	return slices.Clip(out)
}

// voiceIndex is the farm's voice catalogue: the union of the voices of the
// registered nodes. It is derived from the nodes' records, kept up to date as
// nodes come and go and rebuilt from them on restore; it is never written to a
// snapshot.
//
// Nodes normally run the same espeak-ng and so describe a voice id the same
// way. Where they do not (two espeak-ng versions), the catalogue shows the
// least description in compareVoices order among those of the registered
// nodes: a rule that depends only on which nodes are registered, not on the
// order they came in, so every replica and every restore agrees.
type voiceIndex struct {
	// byID counts, for each voice id, how many registered nodes give each
	// description of it.
	byID map[string]map[Voice]int
	// sorted is the catalogue in id order; rebuilt by sync when dirty.
	sorted []Voice
	dirty  bool
}

func newVoiceIndex() *voiceIndex { return &voiceIndex{byID: map[string]map[Voice]int{}} }

// add counts the voices of a node that registered.
func (x *voiceIndex) add(vs []Voice) {
	for _, v := range vs {
		descs := x.byID[v.ID]
		if descs == nil {
			descs = map[Voice]int{}
			x.byID[v.ID] = descs
		}
		if descs[v] == 0 {
			x.dirty = true
		}
		descs[v]++
	}
}

// remove uncounts the voices of a node that is no longer registered.
func (x *voiceIndex) remove(vs []Voice) {
	for _, v := range vs {
		descs := x.byID[v.ID]
		if descs[v] == 0 {
			continue // not counted: cannot happen for a node's own list
		}
		if descs[v]--; descs[v] == 0 {
			delete(descs, v)
			x.dirty = true
			if len(descs) == 0 {
				delete(x.byID, v.ID)
			}
		}
	}
}

// lookup returns the catalogue's description of the voice with that id.
func (x *voiceIndex) lookup(id string) (Voice, bool) {
	descs, ok := x.byID[id]
	if !ok {
		return Voice{}, false
	}
	var best Voice
	first := true
	for v := range descs {
		if first || compareVoices(v, best) < 0 {
			best, first = v, false
		}
	}
	return best, true
}

// sync rebuilds the sorted catalogue after adds and removes changed which
// voices or descriptions it holds. Apply functions that add or remove call
// it before they return, so reads under the read lock find it current.
func (x *voiceIndex) sync() {
	if !x.dirty {
		return
	}
	x.dirty = false
	if len(x.byID) == 0 {
		x.sorted = nil
		return
	}
	out := make([]Voice, 0, len(x.byID))
	for id := range x.byID {
		v, _ := x.lookup(id)
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Voice) int { return cmp.Compare(a.ID, b.ID) })
	x.sorted = out
}

// Voices returns the farm's voice catalogue, sorted by id: the union of the
// voices of every registered node (see voiceIndex for a voice that nodes
// describe differently). It is nil until a node with espeak-ng registers.
func (f *FSM) Voices() []Voice {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Clone(f.s.voices.sorted)
}

// Voice returns the catalogue's voice with that id.
func (f *FSM) Voice(id string) (Voice, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.voices.lookup(id)
}

// VoiceCount returns the number of voices in the catalogue.
func (f *FSM) VoiceCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.voices.byID)
}
