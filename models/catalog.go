package models

import (
	"fmt"
	"sort"
)

// spec is the compact form of one catalog entry (see catalog_data.go).
type spec struct {
	id, name, provider, family, description string

	ops       []Operation
	tiers     []tier // one per resolution, lowest first
	durations []int
	aspects   []string
	styles    []string

	defRes    string
	defDur    int
	defAR     string
	maxImages int
	gpuCount  int
	params    []string // advanced fields accepted, by name
}

// tier is one resolution of a model: its price and what it needs to run.
type tier struct {
	res        string
	credits    int     // credits per output second
	memGB      int     // GPU memory on each GPU
	gpuSeconds float64 // reference-H100 GPU-seconds per output second, all GPUs
}

// build turns a spec into a Model. Every slice and map is freshly allocated
// and non-nil.
func (s spec) build() Model {
	m := Model{
		ID:                 s.id,
		Object:             "model",
		Name:               s.name,
		Provider:           s.provider,
		Family:             s.family,
		Description:        s.description,
		Operations:         append([]Operation{}, s.ops...),
		Resolutions:        make([]string, 0, len(s.tiers)),
		Durations:          append([]int{}, s.durations...),
		AspectRatios:       cloneStrings(s.aspects),
		Styles:             cloneStrings(s.styles),
		CreditsPerSecond:   make(map[string]int, len(s.tiers)),
		DefaultResolution:  s.defRes,
		DefaultDuration:    s.defDur,
		DefaultAspectRatio: s.defAR,
		MaxImages:          s.maxImages,
		Parameters:         params(s.params...),
		Requirements: Requirements{
			GPUMemoryGB:               make(map[string]int, len(s.tiers)),
			GPUCount:                  s.gpuCount,
			GPUSecondsPerOutputSecond: make(map[string]float64, len(s.tiers)),
		},
	}
	for _, t := range s.tiers {
		m.Resolutions = append(m.Resolutions, t.res)
		m.CreditsPerSecond[t.res] = t.credits
		m.Requirements.GPUMemoryGB[t.res] = t.memGB
		m.Requirements.GPUSecondsPerOutputSecond[t.res] = t.gpuSeconds
	}
	for i := range m.Parameters {
		if m.Parameters[i].Name == ParamStyle {
			m.Parameters[i].Enum = cloneStrings(m.Styles)
		}
	}
	return m
}

// catalog is the package's read-only state, built once at initialisation.
var catalog, byID = buildCatalog(specs)

func buildCatalog(ss []spec) ([]Model, map[string]int) {
	ms := make([]Model, 0, len(ss))
	idx := make(map[string]int, len(ss))
	for _, s := range ss {
		if _, dup := idx[s.id]; dup {
			panic(fmt.Sprintf("models: duplicate model id %q", s.id))
		}
		idx[s.id] = len(ms)
		ms = append(ms, s.build())
	}
	return ms, idx
}

// All returns every model in the catalog, in a stable order (grouped by
// family). The result is a deep copy.
func All() []Model {
	out := make([]Model, len(catalog))
	for i, m := range catalog {
		out[i] = m.clone()
	}
	return out
}

// Get returns a deep copy of the model with the given id.
func Get(id string) (Model, bool) {
	m, ok := lookup(id)
	if !ok {
		return Model{}, false
	}
	return m.clone(), true
}

// GPUNeeds is what one render of model id at resolution needs from a node:
// how many GPUs it uses at once (at least one) and the memory on each, in GB.
// It reads the catalog in place, where Get copies the whole model: the
// control plane asks on every manual create, on every replica. ok is false
// when the model is unknown; hasRes when the model has no such resolution.
func GPUNeeds(id, resolution string) (gpus, memoryGB int, ok, hasRes bool) {
	m, ok := lookup(id)
	if !ok {
		return 0, 0, false, false
	}
	memoryGB, hasRes = m.Requirements.GPUMemoryGB[resolution]
	return max(m.Requirements.GPUCount, 1), memoryGB, true, hasRes
}

// IDs returns the ids of every model, sorted.
func IDs() []string {
	ids := make([]string, len(catalog))
	for i, m := range catalog {
		ids[i] = m.ID
	}
	sort.Strings(ids)
	return ids
}

// lookup returns the catalog's own model, which must not be modified.
func lookup(id string) (Model, bool) {
	i, ok := byID[id]
	if !ok {
		return Model{}, false
	}
	return catalog[i], true
}
