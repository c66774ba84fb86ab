package bench

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/cmplx"
	"slices"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// cpuKinds are the CPU task kinds the simulator models, the keys of
// Fleet.TimeScale that are not "<model>@<gpu kind>".
var cpuKinds = []scheduler.Kind{scheduler.KindPlan, scheduler.KindTTS, scheduler.KindComposite, scheduler.KindFinalize}

// gpuScales are the time scales of GPU tasks on gpu, by model.
func (f Fleet) gpuScales(gpu string) map[string]float64 {
	var out map[string]float64
	for k, x := range f.TimeScale {
		if model, kind, ok := strings.Cut(k, "@"); ok && kind == gpu {
			if out == nil {
				out = map[string]float64{}
			}
			out[model] = x
		}
	}
	return out
}

func (f Fleet) validateTimeScale() error {
	for _, k := range slices.Sorted(maps.Keys(f.TimeScale)) {
		p := fmt.Sprintf("fleet.time_scale[%q]", k)
		if x := f.TimeScale[k]; !finite(x) || x < minTimeScale || x > maxTimeScale {
			return fieldErr(p, "must be a number from %g to %g, got %v", minTimeScale, maxTimeScale, x)
		}
		model, gpu, ok := strings.Cut(k, "@")
		if !ok {
			if !slices.Contains(cpuKinds, scheduler.Kind(k)) {
				return fieldErr(p, `a key is "<model>@<gpu kind>" or one of plan, tts, composite, finalize`)
			}
			continue
		}
		if _, ok := models.Get(model); !ok {
			return fieldErr(p, "unknown model %q", model)
		}
		if _, ok := f.speed(gpu); !ok {
			return fieldErr(p, "GPU kind %q has no entry in fleet.gpu_speed", gpu)
		}
	}
	return nil
}

// ErrNoHistory is returned by Twin when the window holds no video.
var ErrNoHistory = errors.New("bench: the farm created no video in the window: nothing to model")

// Twin makes a fleet and a workload from what a farm did (wire.History,
// the admin API's GET /admin/v1/history), so that a what-if starts from
// what really happened:
//
//   - the fleet has a group per node shape, named after its GPU kind,
//     every GPU kind at speed 1, and time_scale set per model and GPU kind
//     (and per CPU task kind) to the farm's measured service time over the
//     simulator's model of it, so the twin's tasks take on average what
//     the farm's took;
//   - the workload's arrival rate is the window's videos per hour, from
//     the hour of the farm's first video on (TwinWindow); it is diurnal when the window spans two days or more and the daily cycle
//     of the hourly counts (its first harmonic) has an amplitude of at
//     least 0.1; the manual share, the manual mix, the auto durations and
//     the scene length are those observed, and each plan is an account
//     class with its share, accounts and priority.
//
// Costs are 0 and there are no SLOs: the planner adds them to the files.
func Twin(h wire.History) (Fleet, Workload, error) {
	wl, err := twinWorkload(h)
	if err != nil {
		return Fleet{}, Workload{}, err
	}
	fleet := twinFleet(h, wl)
	if err := fleet.Validate(); err != nil {
		return Fleet{}, Workload{}, fmt.Errorf("the farm's nodes make no fleet the simulator can run: %w", err)
	}
	if err := wl.Validate(); err != nil {
		return Fleet{}, Workload{}, fmt.Errorf("the farm's videos make no workload the simulator can run: %w", err)
	}
	return fleet, wl, nil
}

// TwinWindow is the part of h's window the farm existed in: from the
// later of h.From and when the farm's state began (h.Began) to h.To. A
// farm younger than the window asked for would otherwise have its videos
// spread over hours in which it did not exist: up 1 minute with 6 videos,
// --since 1h read 6 an hour. A history from a server that does not say
// when the farm began starts at the hour of its first video instead.
func TwinWindow(h wire.History) (from, to time.Time) {
	from, to = h.From, h.To
	if !h.Began.IsZero() {
		if h.Began.After(from) && h.Began.Before(to) {
			from = h.Began
		}
		return from, to
	}
	for i, n := range h.Hourly {
		if n > 0 {
			if start := h.From.Add(time.Duration(i) * time.Hour); start.After(from) && start.Before(to) {
				from = start
			}
			break
		}
	}
	return from, to
}

func twinWorkload(h wire.History) (Workload, error) {
	total, manual := 0, 0
	autoDur := map[int]int{}
	type mixKey struct {
		model, res string
		dur        int
	}
	manualMix := map[mixKey]int{}
	for _, a := range h.Arrivals {
		total += a.Count
		if a.Mode == string(scheduler.ModeManual) {
			manual += a.Count
			manualMix[mixKey{a.Model, a.Resolution, a.DurationSeconds}] += a.Count
		} else {
			autoDur[a.DurationSeconds] += a.Count
		}
	}
	from, to := TwinWindow(h)
	hours := to.Sub(from).Hours()
	if total == 0 || hours <= 0 {
		return Workload{}, ErrNoHistory
	}
	// The daily cycle is fitted from the window's start on too: the
	// empty hours before the farm's first video are no cycle of it.
	seen := h
	skip := min(int(from.Sub(h.From)/time.Hour), len(h.Hourly))
	seen.From, seen.Hourly = h.From.Add(time.Duration(skip)*time.Hour), h.Hourly[skip:]
	wl := Workload{Arrival: twinArrival(seen, float64(total)/hours), ManualShare: float64(manual) / float64(total)}
	for m, n := range manualMix {
		// One entry per (model, resolution, duration), weighted by its count.
		wl.Manual = append(wl.Manual, ManualMix{Model: m.model, Resolution: m.res, Durations: []int{m.dur}, Weight: float64(n)})
	}
	slices.SortFunc(wl.Manual, func(a, b ManualMix) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Resolution, b.Resolution), cmp.Compare(a.Durations[0], b.Durations[0]))
	})
	if auto := total - manual; auto > 0 {
		wl.Auto = &AutoMix{SceneModel: models.AutoSceneModel, SceneResolution: models.AutoResolution, SceneSeconds: twinSceneSeconds(h),
			Durations: repeatByCount(autoDur, auto)}
	}
	for _, c := range h.Classes {
		wl.Accounts = append(wl.Accounts, AccountClass{Name: c.Name, Count: max(c.Accounts, 1), Share: float64(c.Videos) / float64(total), Priority: c.Priority})
	}
	return wl, nil
}

// repeatByCount lists each duration as often as its share of the n
// videos (counts divided by their common divisor, and in hundredths when
// still more than 100), so a uniform draw from the list follows the
// observed distribution.
func repeatByCount(counts map[int]int, n int) []int {
	g := 0
	for _, c := range counts {
		g = gcd(g, c)
	}
	n /= max(g, 1)
	var out []int
	for _, d := range slices.Sorted(maps.Keys(counts)) {
		reps := counts[d] / max(g, 1)
		if n > 100 {
			reps = max(int(math.Round(float64(reps)*100/float64(n))), 1)
		}
		for range reps {
			out = append(out, d)
		}
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// twinSceneSeconds is the scene length that gives the auto videos as
// many scenes as the farm's planner made: their seconds over their scenes
// (one plan task per video). 0 (the default) when no auto video finished
// its plan.
func twinSceneSeconds(h wire.History) int {
	seconds, scenes := 0, 0
	for _, t := range h.Tasks {
		switch scheduler.Kind(t.Kind) {
		case scheduler.KindPlan:
			seconds += t.DurationSeconds * t.Count
		case scheduler.KindScene:
			scenes += t.Count
		}
	}
	if seconds == 0 || scenes == 0 {
		return 0
	}
	return max(int(math.Round(float64(seconds)/float64(scenes))), 1)
}

// twinArrival is a steady process at rate, or a diurnal one when the
// window has two days or more of hourly counts with a clear daily cycle.
func twinArrival(h wire.History, rate float64) Arrival {
	a := Arrival{Process: "steady", RatePerHour: rate}
	if len(h.Hourly) < 48 {
		return a
	}
	// The first Fourier harmonic of the counts at their hour of day.
	var sum float64
	var c complex128
	for i, n := range h.Hourly {
		hod := float64(h.From.Add(time.Duration(i)*time.Hour).Hour()) + float64(h.From.Minute())/60
		c += complex(float64(n), 0) * cmplx.Exp(complex(0, -2*math.Pi*hod/24))
		sum += float64(n)
	}
	if sum == 0 {
		return a
	}
	amp := 2 * cmplx.Abs(c) / sum
	if amp < 0.1 {
		return a
	}
	peak := math.Mod(-cmplx.Phase(c)*24/(2*math.Pi)+24, 24)
	return Arrival{Process: "diurnal", RatePerHour: rate, Amplitude: min(amp, 1), PeakHour: math.Round(peak*10) / 10}
}

func twinFleet(h wire.History, wl Workload) Fleet {
	f := Fleet{Name: "twin of the farm", GPUSpeed: map[string]float64{}}
	names := map[string]int{}
	for _, n := range h.Nodes {
		g := NodeGroup{GPUModel: n.GPU, Count: n.Count, GPUsPerNode: n.GPUs, GPUMemoryGB: n.GPUMemoryGB, CPUSlots: n.CPUSlots}
		if !slices.Equal(n.Models, slices.Sorted(slices.Values(models.IDs()))) {
			g.Models = slices.DeleteFunc(slices.Clone(n.Models), func(m string) bool { _, ok := models.Get(m); return !ok })
		}
		base := "cpu"
		if n.GPUs > 0 {
			base = groupName(n.GPU)
			f.GPUSpeed[n.GPU] = 1
		}
		names[base]++
		g.Name = base
		if names[base] > 1 {
			g.Name = fmt.Sprintf("%s-%d", base, names[base])
		}
		f.Groups = append(f.Groups, g)
	}
	f.TimeScale = twinTimeScale(h, wl)
	return f
}

// groupName is a GPU kind as a group name: "NVIDIA H100 80GB HBM3" →
// "h100-80gb-hbm3".
func groupName(gpu string) string {
	s := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(gpu), "NVIDIA")))
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '/' }), "-")
	if s == "" {
		return "gpu"
	}
	return s
}

// twinTimeScale is, for each model on each GPU kind and each CPU task
// kind, the farm's measured seconds over the simulator's modelled seconds
// for the same tasks (at speed 1: the twin's GPU kinds all have speed 1).
func twinTimeScale(h wire.History, wl Workload) map[string]float64 {
	measured, modelled := map[string]float64{}, map[string]float64{}
	sceneSec := defaultSceneSeconds
	if wl.Auto != nil && wl.Auto.SceneSeconds > 0 {
		sceneSec = wl.Auto.SceneSeconds
	}
	for _, t := range h.Tasks {
		kind := scheduler.Kind(t.Kind)
		key, each := t.Kind, 0.0
		switch kind {
		case scheduler.KindRender, scheduler.KindScene:
			m, ok := models.Get(t.Model)
			if !ok || t.GPU == "" {
				continue
			}
			res, out := t.Resolution, t.DurationSeconds
			if kind == scheduler.KindScene {
				res, out = cmp.Or(res, models.AutoResolution), sceneSec
			}
			key, each = t.Model+"@"+t.GPU, renderSeconds(m, res, out)
		default:
			if !slices.Contains(cpuKinds, kind) {
				continue
			}
			each = cpuSeconds(kind, float64(t.DurationSeconds))
		}
		if each <= 0 {
			continue
		}
		measured[key] += t.Seconds
		modelled[key] += each * float64(t.Count)
	}
	out := map[string]float64{}
	for k, m := range measured {
		if x := m / modelled[k]; x > 0 && finite(x) {
			// Within the bounds a fleet may have: a task measured at
			// under a ten-thousandth of the model would round to 0.
			out[k] = min(max(math.Round(x*1e4)/1e4, minTimeScale), maxTimeScale)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// WhatIf changes a fleet and a workload the way a planner asks: the
// arrival rate times scale (1 leaves it), and add[group] more nodes in
// each named group (a negative count removes nodes). The result is
// validated; an unknown group is an error that lists the fleet's groups.
func WhatIf(fleet Fleet, wl Workload, scale float64, add map[string]int) (Fleet, Workload, error) {
	if !finite(scale) || scale <= 0 {
		return Fleet{}, Workload{}, fieldErr("scale-arrivals", "must be a number > 0, got %v", scale)
	}
	wl.Arrival.RatePerHour *= scale
	fleet.Groups = slices.Clone(fleet.Groups)
	for _, name := range slices.Sorted(maps.Keys(add)) {
		i := slices.IndexFunc(fleet.Groups, func(g NodeGroup) bool { return g.Name == name })
		if i < 0 {
			var names []string
			for _, g := range fleet.Groups {
				names = append(names, g.Name)
			}
			return Fleet{}, Workload{}, fieldErr("add-nodes", "no node group %q; the fleet's groups are %s", name, strings.Join(names, ", "))
		}
		fleet.Groups[i].Count += add[name]
	}
	if err := fleet.Validate(); err != nil {
		return Fleet{}, Workload{}, err
	}
	return fleet, wl, wl.Validate()
}
