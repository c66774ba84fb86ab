package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/vidfarm/vidfarm/models"
	"sigs.k8s.io/yaml"
)

// ErrSimConfig is wrapped by every error about a fleet, a workload or a
// SimConfig that does not validate; the message names the offending field
// by its JSON path (e.g. "fleet.groups[1].gpu_model").
var ErrSimConfig = errors.New("bench: invalid simulation input")

// ReferenceGPU is the GPU kind the models catalog's GPU-seconds are measured
// on. Its speed factor is 1.0 unless the fleet file says otherwise.
const ReferenceGPU = "H100"

// Fleet is the farm the simulator runs: groups of identical nodes.
type Fleet struct {
	// Name is what the charts' titles call the farm (optional; the
	// command line uses the file's name when it is empty).
	Name string `json:"name,omitempty"`
	// GPUSpeed maps a GPU kind to its speed relative to the reference H100
	// (1.0): a render that takes 100 s on an H100 takes 100/0.5 = 200 s on
	// a GPU kind with factor 0.5. Every group's gpu_model must be listed,
	// except "H100", which defaults to 1.0.
	GPUSpeed map[string]float64 `json:"gpu_speed"`
	// Currency is the ISO 4217 code (three capital letters, e.g. "USD")
	// of every cost_per_hour; the report writes its costs in it. Empty:
	// costs are plain numbers in the unit of cost_per_hour.
	Currency string      `json:"currency,omitempty"`
	Groups   []NodeGroup `json:"groups"`
	// TimeScale multiplies the modelled service time of some tasks:
	// "<model>@<gpu kind>" a GPU task of that model on that GPU kind,
	// "plan", "tts", "composite" or "finalize" a CPU task. A twin of a
	// farm (Twin) sets it to what the farm measured over what the model
	// says; a task not listed takes the modelled time.
	TimeScale map[string]float64 `json:"time_scale,omitempty"`
}

// NodeGroup is Count identical nodes.
type NodeGroup struct {
	Name        string  `json:"name"`
	GPUModel    string  `json:"gpu_model"`     // a key of Fleet.GPUSpeed (or "H100")
	Count       int     `json:"count"`         // nodes in the group
	GPUsPerNode int     `json:"gpus_per_node"` // 0 for CPU-only nodes
	GPUMemoryGB float64 `json:"gpu_memory_gb"` // per GPU
	CPUSlots    int     `json:"cpu_slots"`     // concurrent CPU tasks per node
	// CostPerHour is the price of one node per hour, in Fleet.Currency;
	// the report's cost figures are in the same unit.
	CostPerHour float64 `json:"cost_per_hour"`
	// Models lists the model ids the nodes run; empty means every catalog
	// model.
	Models []string `json:"models,omitempty"`
	// Faults and warm-up (sim_faults.go), all optional; durations are Go
	// duration strings ("90s", "720h").
	//
	// MTBF is a node's mean time between failures and Repair its mean
	// repair time, both drawn from exponential distributions; set both or
	// neither.
	MTBF   string `json:"mtbf,omitempty"`
	Repair string `json:"repair,omitempty"`
	// AgentRestartEvery is the mean time between agent restarts and
	// AgentRestartTime the mean time the node is away for one; set both or
	// neither.
	AgentRestartEvery string `json:"agent_restart_every,omitempty"`
	AgentRestartTime  string `json:"agent_restart_time,omitempty"`
	// ModelLoad maps a model id to the time a node of this group (and so
	// of its GPU kind) takes to load it before a render of a model not warm
	// on it; the key "*" is the default of models not listed (without it,
	// they load in no time). Set, it turns warm-model tracking on.
	ModelLoad map[string]string `json:"model_load,omitempty"`
	// WarmSlots bounds the models warm on a node at once (least recently
	// used evicted first); 0 means no bound. Needs model_load.
	WarmSlots int `json:"warm_slots,omitempty"`
}

// Workload is what clients ask of the farm.
type Workload struct {
	Arrival Arrival `json:"arrival"`
	// ManualShare is the fraction of videos in manual mode (0..1); the rest
	// are auto. Manual needs Manual, auto needs Auto, when their share is
	// above zero.
	ManualShare float64     `json:"manual_share"`
	Manual      []ManualMix `json:"manual,omitempty"`
	Auto        *AutoMix    `json:"auto,omitempty"`
	// Accounts are classes of accounts; a video's account class is drawn by
	// Share, then one of the class's Count accounts uniformly.
	Accounts []AccountClass `json:"accounts"`
	// SLOs are the objectives the report measures attainment of, overall
	// and per mode; an account class may set its own instead.
	SLOs []SLO `json:"slos,omitempty"`
	// ExponentialService draws every task's service time from an
	// exponential distribution with the computed time as its mean, instead
	// of using the computed time itself. It makes a single-class workload
	// an M/M/c queue, for checks against queueing theory.
	ExponentialService bool `json:"exponential_service,omitempty"`
}

// Arrival is the arrival process of videos: Poisson with a rate that may
// vary in time.
type Arrival struct {
	// Process is "steady" (constant rate) or "diurnal" (the rate follows a
	// sinusoid over 24 h: RatePerHour * (1 + Amplitude*cos(2π(h-PeakHour)/24))).
	Process     string  `json:"process"`
	RatePerHour float64 `json:"rate_per_hour"` // mean videos per hour
	Amplitude   float64 `json:"amplitude,omitempty"`
	PeakHour    float64 `json:"peak_hour,omitempty"` // hour of day (0..24) of the peak
	// Bursts multiply the rate during windows of the simulated time.
	Bursts []Burst `json:"bursts,omitempty"`
}

// Burst multiplies the arrival rate by Multiplier from StartHour for
// Minutes minutes of simulated time.
type Burst struct {
	StartHour  float64 `json:"start_hour"`
	Minutes    float64 `json:"minutes"`
	Multiplier float64 `json:"multiplier"`
}

// ManualMix is one kind of manual video and its weight in the manual mix.
type ManualMix struct {
	Model      string `json:"model"`
	Resolution string `json:"resolution"`
	// Durations in seconds, drawn uniformly; each must be one the model offers.
	Durations []int   `json:"durations"`
	Weight    float64 `json:"weight"`
}

// AutoMix describes auto videos: their durations and the model their scenes
// are rendered with.
type AutoMix struct {
	SceneModel      string `json:"scene_model"`
	SceneResolution string `json:"scene_resolution"`
	// SceneSeconds is the length of one scene; a video of d seconds has
	// ceil(d/SceneSeconds) scenes. Zero means 6.
	SceneSeconds int `json:"scene_seconds,omitempty"`
	// Durations in seconds (models.AutoMinDuration..AutoMaxDuration), drawn
	// uniformly.
	Durations []int `json:"durations"`
}

// AccountClass is Count accounts sharing Share of the videos.
type AccountClass struct {
	Name     string  `json:"name"`
	Count    int     `json:"count"`
	Share    float64 `json:"share"`
	Priority int     `json:"priority,omitempty"`
	// SLOs replace the workload's SLOs for this class, when set.
	SLOs []SLO `json:"slos,omitempty"`
}

// defaultSceneSeconds is the scene length of an auto video when the
// workload does not set one.
const defaultSceneSeconds = 6

// DecodeFleet reads a fleet as YAML or JSON (field names as in the JSON
// tags); unknown fields are an error. The result is validated.
func DecodeFleet(r io.Reader) (Fleet, error) {
	var f Fleet
	if err := decodeStrict(r, &f); err != nil {
		return Fleet{}, fmt.Errorf("%w: fleet: %w", ErrSimConfig, err)
	}
	return f, f.Validate()
}

// DecodeWorkload reads a workload as YAML or JSON (field names as in the
// JSON tags); unknown fields are an error. The result is validated.
func DecodeWorkload(r io.Reader) (Workload, error) {
	var w Workload
	if err := decodeStrict(r, &w); err != nil {
		return Workload{}, fmt.Errorf("%w: workload: %w", ErrSimConfig, err)
	}
	return w, w.Validate()
}

// decodeStrict turns YAML (JSON is YAML) into JSON and decodes that, so
// one set of tags and one unknown-field check serve both.
func decodeStrict(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if data, err = yaml.YAMLToJSON(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrSimConfig, field, fmt.Sprintf(format, args...))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Bounds of a GPU kind's speed and of a time scale. No GPU is a thousand
// times faster or slower than an H100; a time scale spans further because
// a twin measures procedural runners that finish in a few thousandths of
// the catalog's time (Twin rounds to 1e-4). Beyond them a value is a slip
// of units, and a task's time would leave the simulated year far behind.
const (
	minGPUSpeed, maxGPUSpeed   = 1e-3, 1e3
	minTimeScale, maxTimeScale = 1e-4, 1e4
)

// speed returns the speed factor of a GPU kind.
func (f Fleet) speed(kind string) (float64, bool) {
	if s, ok := f.GPUSpeed[kind]; ok {
		return s, true
	}
	if kind == ReferenceGPU {
		return 1, true
	}
	return 0, false
}

// Validate checks the fleet; the error names the offending field.
func (f Fleet) Validate() error {
	kinds := make([]string, 0, len(f.GPUSpeed))
	for k := range f.GPUSpeed {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		if s := f.GPUSpeed[k]; !finite(s) || s < minGPUSpeed || s > maxGPUSpeed {
			return fieldErr(fmt.Sprintf("fleet.gpu_speed[%q]", k), "must be a number from %g to %g (times an H100), got %v", minGPUSpeed, maxGPUSpeed, s)
		}
	}
	if !validCurrency(f.Currency) {
		return fieldErr("fleet.currency", "must be three capital letters (ISO 4217, e.g. USD) or empty, got %q", f.Currency)
	}
	if len(f.Groups) == 0 {
		return fieldErr("fleet.groups", "at least one node group is required")
	}
	names := map[string]bool{}
	gpus := 0
	for i, g := range f.Groups {
		p := fmt.Sprintf("fleet.groups[%d]", i)
		if err := checkName(p+".name", "group name", g.Name, names); err != nil {
			return err
		}
		switch {
		case g.Count < 1 || g.Count > 100000:
			return fieldErr(p+".count", "must be 1..100000, got %d", g.Count)
		case g.GPUsPerNode < 0 || g.GPUsPerNode > 64:
			return fieldErr(p+".gpus_per_node", "must be 0..64, got %d", g.GPUsPerNode)
		case g.CPUSlots < 0 || g.CPUSlots > 1024:
			return fieldErr(p+".cpu_slots", "must be 0..1024, got %d", g.CPUSlots)
		case g.GPUsPerNode == 0 && g.CPUSlots == 0:
			return fieldErr(p, "a node needs at least one GPU or one CPU slot")
		case !finite(g.CostPerHour) || g.CostPerHour < 0:
			return fieldErr(p+".cost_per_hour", "must be a number >= 0, got %v", g.CostPerHour)
		}
		if g.GPUsPerNode > 0 {
			if !finite(g.GPUMemoryGB) || g.GPUMemoryGB <= 0 {
				return fieldErr(p+".gpu_memory_gb", "must be a number > 0, got %v", g.GPUMemoryGB)
			}
			if _, ok := f.speed(g.GPUModel); !ok {
				return fieldErr(p+".gpu_model", "%q has no entry in fleet.gpu_speed", g.GPUModel)
			}
			gpus += g.Count * g.GPUsPerNode
		}
		for j, m := range g.Models {
			if _, ok := models.Get(m); !ok {
				return fieldErr(fmt.Sprintf("%s.models[%d]", p, j), "unknown model %q", m)
			}
		}
		if _, err := g.faults(p); err != nil {
			return err
		}
	}
	if gpus == 0 {
		return fieldErr("fleet.groups", "the fleet has no GPU")
	}
	return f.validateTimeScale()
}

// Validate checks the workload; the error names the offending field.
func (w Workload) Validate() error {
	a := w.Arrival
	switch {
	case a.Process != "steady" && a.Process != "diurnal":
		return fieldErr("workload.arrival.process", `must be "steady" or "diurnal", got %q`, a.Process)
	case !finite(a.RatePerHour) || a.RatePerHour <= 0 || a.RatePerHour > 1e7:
		return fieldErr("workload.arrival.rate_per_hour", "must be > 0 and <= 1e7, got %v", a.RatePerHour)
	case !finite(a.Amplitude) || a.Amplitude < 0 || a.Amplitude > 1:
		return fieldErr("workload.arrival.amplitude", "must be 0..1, got %v", a.Amplitude)
	case a.Process == "steady" && a.Amplitude != 0:
		return fieldErr("workload.arrival.amplitude", `only applies to the "diurnal" process`)
	case !finite(a.PeakHour) || a.PeakHour < 0 || a.PeakHour >= 24:
		return fieldErr("workload.arrival.peak_hour", "must be in [0, 24), got %v", a.PeakHour)
	}
	for i, b := range a.Bursts {
		p := fmt.Sprintf("workload.arrival.bursts[%d]", i)
		switch {
		case !finite(b.StartHour) || b.StartHour < 0:
			return fieldErr(p+".start_hour", "must be >= 0, got %v", b.StartHour)
		case !finite(b.Minutes) || b.Minutes <= 0:
			return fieldErr(p+".minutes", "must be > 0, got %v", b.Minutes)
		case !finite(b.Multiplier) || b.Multiplier <= 0 || b.Multiplier > 1000:
			return fieldErr(p+".multiplier", "must be > 0 and <= 1000, got %v", b.Multiplier)
		}
	}
	if !finite(w.ManualShare) || w.ManualShare < 0 || w.ManualShare > 1 {
		return fieldErr("workload.manual_share", "must be 0..1, got %v", w.ManualShare)
	}
	if w.ManualShare > 0 && len(w.Manual) == 0 {
		return fieldErr("workload.manual", "required when manual_share > 0")
	}
	for i, m := range w.Manual {
		if err := m.validate(fmt.Sprintf("workload.manual[%d]", i)); err != nil {
			return err
		}
	}
	if w.ManualShare < 1 {
		if w.Auto == nil {
			return fieldErr("workload.auto", "required when manual_share < 1")
		}
		if err := w.Auto.validate("workload.auto"); err != nil {
			return err
		}
	}
	if err := validateSLOs("workload.slos", w.SLOs); err != nil {
		return err
	}
	if len(w.Accounts) == 0 {
		return fieldErr("workload.accounts", "at least one account class is required")
	}
	names := map[string]bool{}
	total := 0.0
	for i, c := range w.Accounts {
		p := fmt.Sprintf("workload.accounts[%d]", i)
		if err := checkName(p+".name", "account class", c.Name, names); err != nil {
			return err
		}
		switch {
		case c.Count < 1 || c.Count > 1000000:
			return fieldErr(p+".count", "must be 1..1000000, got %d", c.Count)
		case !finite(c.Share) || c.Share <= 0:
			return fieldErr(p+".share", "must be > 0, got %v", c.Share)
		}
		if err := validateSLOs(p+".slos", c.SLOs); err != nil {
			return err
		}
		total += c.Share
	}
	if !finite(total) {
		return fieldErr("workload.accounts", "shares must add up to a finite number")
	}
	return nil
}

func (m ManualMix) validate(p string) error {
	md, ok := models.Get(m.Model)
	if !ok {
		return fieldErr(p+".model", "unknown model %q", m.Model)
	}
	if !slices.Contains(md.Resolutions, m.Resolution) {
		return fieldErr(p+".resolution", "model %s offers %s, got %q", m.Model, strings.Join(md.Resolutions, ", "), m.Resolution)
	}
	if len(m.Durations) == 0 {
		return fieldErr(p+".durations", "at least one duration is required")
	}
	for j, d := range m.Durations {
		if !slices.Contains(md.Durations, d) {
			return fieldErr(fmt.Sprintf("%s.durations[%d]", p, j), "model %s offers %v seconds, got %d", m.Model, md.Durations, d)
		}
	}
	if !finite(m.Weight) || m.Weight <= 0 {
		return fieldErr(p+".weight", "must be > 0, got %v", m.Weight)
	}
	return nil
}

func (a *AutoMix) validate(p string) error {
	md, ok := models.Get(a.SceneModel)
	if !ok {
		return fieldErr(p+".scene_model", "unknown model %q", a.SceneModel)
	}
	if !slices.Contains(md.Resolutions, a.SceneResolution) {
		return fieldErr(p+".scene_resolution", "model %s offers %s, got %q", a.SceneModel, strings.Join(md.Resolutions, ", "), a.SceneResolution)
	}
	if a.SceneSeconds < 0 || a.SceneSeconds > 60 {
		return fieldErr(p+".scene_seconds", "must be 0..60 (0 means %d), got %d", defaultSceneSeconds, a.SceneSeconds)
	}
	if len(a.Durations) == 0 {
		return fieldErr(p+".durations", "at least one duration is required")
	}
	for j, d := range a.Durations {
		if d < models.AutoMinDuration || d > models.AutoMaxDuration {
			return fieldErr(fmt.Sprintf("%s.durations[%d]", p, j), "must be %d..%d seconds, got %d", models.AutoMinDuration, models.AutoMaxDuration, d)
		}
	}
	return nil
}

// checkName accepts a unique name without spaces or '/' and records it in seen.
func checkName(path, what, name string, seen map[string]bool) error {
	switch {
	case name == "" || strings.ContainsAny(name, "/ "):
		return fieldErr(path, "must be non-empty without spaces or '/', got %q", name)
	case seen[name]:
		return fieldErr(path, "duplicate %s %q", what, name)
	}
	seen[name] = true
	return nil
}

// validCurrency: empty or three capital letters.
func validCurrency(c string) bool {
	if c == "" {
		return true
	}
	if len(c) != 3 {
		return false
	}
	for i := range len(c) {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}
