package bench

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/models"
)

// TestSpeedAndScaleBounds: a GPU speed or a time scale outside its range
// is a slip of units, refused with the field and the range, not run until
// its tasks' times wrap around int64.
func TestSpeedAndScaleBounds(t *testing.T) {
	fleet, _ := loadExamples(t)
	cases := []struct {
		name  string
		edit  func(f *Fleet)
		field string // empty: accepted
	}{
		{"speed 1e-9", func(f *Fleet) { f.GPUSpeed["H100"] = 1e-9 }, `fleet.gpu_speed["H100"]`},
		{"speed 1e4", func(f *Fleet) { f.GPUSpeed["H100"] = 1e4 }, `fleet.gpu_speed["H100"]`},
		{"speed at the lower bound", func(f *Fleet) { f.GPUSpeed["H100"] = minGPUSpeed }, ""},
		{"speed at the upper bound", func(f *Fleet) { f.GPUSpeed["H100"] = maxGPUSpeed }, ""},
		{"finalize 1e12", func(f *Fleet) { f.TimeScale = map[string]float64{"finalize": 1e12} }, `fleet.time_scale["finalize"]`},
		{"model 1e12", func(f *Fleet) { f.TimeScale = map[string]float64{"seedance-1.0-lite@H100": 1e12} }, `fleet.time_scale["seedance-1.0-lite@H100"]`},
		{"model 1e-5", func(f *Fleet) { f.TimeScale = map[string]float64{"seedance-1.0-lite@H100": 1e-5} }, `fleet.time_scale["seedance-1.0-lite@H100"]`},
		{"scale at the bounds", func(f *Fleet) { f.TimeScale = map[string]float64{"plan": minTimeScale, "tts": maxTimeScale} }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := cloneFleet(fleet)
			tc.edit(&f)
			err := f.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), tc.field+": must be a number from ") {
				t.Fatalf("err = %v, want ErrSimConfig naming %s and its range", err, tc.field)
			}
		})
	}
}

// TestSaturatingTimes: the arithmetic of simulated times never wraps.
func TestSaturatingTimes(t *testing.T) {
	cases := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"seconds", secondsDur(1.5), 1500 * time.Millisecond},
		{"negative seconds", secondsDur(-1), 0},
		{"1e12 seconds", secondsDur(1e12), maxSimTime},
		{"NaN seconds", secondsDur(math.NaN()), maxSimTime},
		{"+Inf hours", hoursDur(math.Inf(1)), maxSimTime},
		{"a year", hoursDur(maxSimHours), maxSimHours * time.Hour},
		{"sum", later(time.Hour, time.Minute), time.Hour + time.Minute},
		{"sum past the cap", later(maxSimTime-time.Second, time.Minute), maxSimTime},
		{"cap plus cap", later(maxSimTime, maxSimTime), maxSimTime},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestSlowestTasksDoNotPanic runs, at the bounds validation allows, the
// slowest task there is (the catalog's longest render on a GPU at the
// lowest speed with the largest time scale: past int64's nanoseconds
// unless saturated) and nodes failing once in a hundred years (the
// longest mtbf: an exponential draw of it passes int64 one time in 20).
// Both used to panic with "event scheduled in the past".
func TestSlowestTasksDoNotPanic(t *testing.T) {
	var slow ManualMix
	longest := 0.0
	for _, id := range models.IDs() {
		m, _ := models.Get(id)
		if m.Requirements.GPUCount != 1 {
			continue
		}
		for _, res := range m.Resolutions {
			for _, d := range m.Durations {
				if sec := renderSeconds(m, res, d); sec > longest && m.Requirements.GPUMemoryGB[res] <= 80 {
					longest, slow = sec, ManualMix{Model: id, Resolution: res, Durations: []int{d}, Weight: 1}
				}
			}
		}
	}
	if factor := maxTimeScale / minGPUSpeed; longest*factor*1e9 < math.MaxInt64 {
		t.Fatalf("the longest render, %v s, would not overflow at %v times: the test checks nothing", longest, factor)
	}
	wl := Workload{
		Arrival:     Arrival{Process: "steady", RatePerHour: 60},
		ManualShare: 1,
		Manual:      []ManualMix{slow},
		Accounts:    []AccountClass{{Name: "all", Count: 1, Share: 1}},
	}
	cases := []struct {
		name  string
		fleet Fleet
	}{
		{"slow task", Fleet{
			GPUSpeed:  map[string]float64{"H100": minGPUSpeed},
			TimeScale: map[string]float64{slow.Model + "@H100": maxTimeScale},
			Groups:    []NodeGroup{{Name: "h100", GPUModel: "H100", Count: 2, GPUsPerNode: 1, GPUMemoryGB: 80, CPUSlots: 2}},
		}},
		{"century mtbf", Fleet{
			Groups: []NodeGroup{{Name: "h100", GPUModel: "H100", Count: 200, GPUsPerNode: 1, GPUMemoryGB: 80, CPUSlots: 2,
				MTBF: fmt.Sprintf("%dh", maxSimHours*100), Repair: "1h"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Simulate(tc.fleet, wl, SimConfig{Hours: 2, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Submitted == 0 {
				t.Fatal("nothing submitted")
			}
			if tc.name == "slow task" && (rep.Completed != 0 || rep.GPUUtilisation < 0.99) {
				t.Fatalf("completed %v, GPU utilisation %v: want none completed and both GPUs busy to the end", rep.Completed, rep.GPUUtilisation)
			}
		})
	}
}
