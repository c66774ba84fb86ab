package bench

import (
	"errors"
	"strings"
	"testing"
)

// TestUnrunnableWorkloadRefused: a workload that asks for a model no node
// group of the fleet can run, or for CPU work no node has the slots for,
// is refused before anything is simulated, by a plain run, a sweep and
// the optimizer, with what the model needs and what the fleet has; one
// that fits runs.
func TestUnrunnableWorkloadRefused(t *testing.T) {
	a10 := NodeGroup{Name: "a10", GPUModel: "A10", Count: 2, GPUsPerNode: 1, GPUMemoryGB: 24, CPUSlots: 4, CostPerHour: 0.6}
	l40s := NodeGroup{Name: "l40s", GPUModel: "L40S", Count: 1, GPUsPerNode: 2, GPUMemoryGB: 48, CPUSlots: 4, CostPerHour: 2.2}
	h100 := NodeGroup{Name: "h100", GPUModel: "H100", Count: 1, GPUsPerNode: 4, GPUMemoryGB: 80, CPUSlots: 4, CostPerHour: 12}
	fleet := func(groups ...NodeGroup) Fleet {
		return Fleet{GPUSpeed: map[string]float64{"A10": 0.25, "L40S": 0.45}, Groups: groups}
	}
	manual := func(share float64, mixes ...ManualMix) Workload {
		wl := Workload{
			Arrival:     Arrival{Process: "steady", RatePerHour: 30},
			ManualShare: share,
			Manual:      mixes,
			Accounts:    []AccountClass{{Name: "pro", Count: 10, Share: 1}},
			SLOs:        []SLO{{Metric: MetricTurnaround, Seconds: 1800}},
		}
		if share < 1 {
			wl.Auto = &AutoMix{SceneModel: "ltx-video-13b", SceneResolution: "480p", Durations: []int{30}}
		}
		return wl
	}
	ltx := ManualMix{Model: "ltx-video-13b", Resolution: "480p", Durations: []int{5}, Weight: 2}
	veo := ManualMix{Model: "veo-3", Resolution: "720p", Durations: []int{4}, Weight: 1}
	seedance := ManualMix{Model: "seedance-1.0-lite", Resolution: "720p", Durations: []int{5}, Weight: 1}
	ltxOnly := l40s
	ltxOnly.Models = []string{"ltx-video-13b"}
	noCPU := h100
	noCPU.CPUSlots = 0
	oneSlot := h100
	oneSlot.CPUSlots = 1
	autoSeedance := manual(0)
	autoSeedance.Auto.SceneModel, autoSeedance.Auto.SceneResolution = "seedance-1.0-lite", "720p"

	for _, tc := range []struct {
		name  string
		fleet Fleet
		wl    Workload
		want  []string // in the error; none: it runs
	}{
		{"a 4-GPU model on 1- and 2-GPU nodes", fleet(a10, l40s), manual(1, ltx, veo),
			[]string{"workload.manual[1].model", "veo-3 at 720p", "4 GPUs with at least 70 GB each on one node",
				"a10: 1 × A10 with 24 GB", "l40s: 2 × L40S with 48 GB"}},
		{"36 GB of memory on 24 GB GPUs", fleet(a10), manual(1, seedance),
			[]string{"workload.manual[0].model", "seedance-1.0-lite at 720p", "1 GPU with at least 36 GB", "a10: 1 × A10 with 24 GB"}},
		{"a model no group lists", fleet(a10, ltxOnly), manual(1, ltx, seedance),
			[]string{"workload.manual[1].model", "seedance-1.0-lite", "l40s: 2 × L40S with 48 GB, seedance-1.0-lite not among its models"}},
		{"an auto scene model", fleet(a10), autoSeedance,
			[]string{"workload.auto.scene_model", "seedance-1.0-lite at 720p"}},
		{"no CPU slot for the finalize", fleet(noCPU), manual(1, ltx),
			[]string{"fleet.groups", "finalize step of every manual video needs 1 CPU slot on one node", "at most 0"}},
		{"one CPU slot for a 2-slot composite", fleet(oneSlot), manual(0),
			[]string{"composite step of every auto video needs 2 CPU slots", "at most 1"}},
		{"a fleet that runs it all", fleet(a10, l40s, h100), manual(0.5, ltx, veo, seedance), nil},
		// A mix the workload never draws (no manual videos) needs no GPU.
		{"an unfit mix never drawn", fleet(a10), func() Workload { wl := manual(0, veo); return wl }(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := SimConfig{Hours: 0.5, Seed: 1, Replications: 2}
			_, simErr := Simulate(tc.fleet, tc.wl, cfg)
			_, sweepErr := Sweep(tc.fleet, tc.wl, cfg, SweepConfig{Group: tc.fleet.Groups[0].Name, Min: 1, Max: 2, TargetP95: 600})
			_, optErr := Optimize(tc.fleet, tc.wl, cfg, OptimizeConfig{Max: map[string]int{tc.fleet.Groups[0].Name: 1}})
			for what, err := range map[string]error{"Simulate": simErr, "Sweep": sweepErr, "Optimize": optErr} {
				if tc.want == nil {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					continue
				}
				if !errors.Is(err, ErrSimConfig) {
					t.Fatalf("%s: err %v, want ErrSimConfig", what, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q lacks %q", what, err, w)
					}
				}
			}
		})
	}
}

// TestOptimizeRefusesOnlyWhatNoCandidateRuns: the optimizer may try fleets
// without the group a model needs (they miss), but refuses ranges in which
// no candidate has one.
func TestOptimizeRefusesOnlyWhatNoCandidateRuns(t *testing.T) {
	fleet := Fleet{GPUSpeed: map[string]float64{"A10": 0.25}, Groups: []NodeGroup{
		{Name: "h100", GPUModel: "H100", Count: 1, GPUsPerNode: 1, GPUMemoryGB: 80, CPUSlots: 4, CostPerHour: 3},
		{Name: "a10", GPUModel: "A10", Count: 1, GPUsPerNode: 1, GPUMemoryGB: 24, CPUSlots: 4, CostPerHour: 0.6},
	}}
	wl := Workload{
		Arrival:     Arrival{Process: "steady", RatePerHour: 20},
		ManualShare: 1,
		Manual:      []ManualMix{{Model: "seedance-1.0-lite", Resolution: "720p", Durations: []int{5}, Weight: 1}},
		Accounts:    []AccountClass{{Name: "pro", Count: 10, Share: 1}},
		SLOs:        []SLO{{Metric: MetricGPUWait, Seconds: 600}},
	}
	cfg := SimConfig{Hours: 2, Seed: 1, Replications: 1}
	res, err := Optimize(fleet, wl, cfg, OptimizeConfig{Max: map[string]int{"h100": 1, "a10": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tried) == 0 || res.Tried[0].Counts[0] != 0 || res.Tried[0].Verdict != VerdictMisses {
		t.Errorf("the a10-only fleet (cheapest) should be tried and miss: %+v", res.Tried)
	}
	_, err = Optimize(fleet, wl, cfg, OptimizeConfig{Max: map[string]int{"h100": 0, "a10": 2}})
	if !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), "every group at the largest count searched") {
		t.Errorf("h100 at 0: err %v, want the search refused", err)
	}
}
