package bench

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestExpectedVideos(t *testing.T) {
	cases := []struct {
		name  string
		a     Arrival
		hours float64
		want  float64
	}{
		{"steady", Arrival{Process: "steady", RatePerHour: 100}, 10, 1000},
		{"diurnal over whole days", Arrival{Process: "diurnal", RatePerHour: 100, Amplitude: 0.5, PeakHour: 15}, 48, 4800},
		// From 0 to 12 h around a peak at 6: 100·(12 + 0.5·24/π).
		{"diurnal half a day about its peak", Arrival{Process: "diurnal", RatePerHour: 100, Amplitude: 0.5, PeakHour: 6}, 12, 1200 + 50*24/math.Pi},
		{"a burst", Arrival{Process: "steady", RatePerHour: 100, Bursts: []Burst{{StartHour: 2, Minutes: 30, Multiplier: 3}}}, 10, 1000 + 100},
		{"a burst past the end", Arrival{Process: "steady", RatePerHour: 100, Bursts: []Burst{{StartHour: 9.5, Minutes: 120, Multiplier: 3}}}, 10, 1000 + 100},
		{"overlapping bursts multiply", Arrival{Process: "steady", RatePerHour: 100, Bursts: []Burst{
			{StartHour: 1, Minutes: 60, Multiplier: 2}, {StartHour: 1.5, Minutes: 60, Multiplier: 2}}}, 10, 1000 + 50 + 150 + 50},
		{"a unit slip", Arrival{Process: "steady", RatePerHour: 1e7}, maxSimHours, 1e7 * maxSimHours},
	}
	for _, tc := range cases {
		if got := expectedVideos(tc.a, tc.hours); math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("%s: %v videos, want %v", tc.name, got, tc.want)
		}
	}
	// And the simulator's source makes about that many.
	fleet, wl := loadExamples(t)
	// Twenty runs: the mean's standard error is under 0.3% of it.
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 40, Seed: 1, Replications: 20})
	if err != nil {
		t.Fatal(err)
	}
	if want := expectedVideos(wl.Arrival, 40); math.Abs(rep.Submitted-want)/want > 0.01 {
		t.Errorf("the example workload submitted %v videos in 40 h on average, the estimate says %v", rep.Submitted, want)
	}
}

// TestRefusesRunsTooLargeForMemory: a run expected to make more videos
// than maxSimVideos is refused before it starts, by a run, replications,
// a sweep and the optimizer, with the estimate, the cap and what to
// change.
func TestRefusesRunsTooLargeForMemory(t *testing.T) {
	fleet, wl := loadExamples(t)
	wl.Arrival.RatePerHour = 1e7
	wl.SLOs = []SLO{{Metric: MetricGPUWait, Seconds: 60, Target: 0.9}} // the optimizer's
	cfg := SimConfig{Hours: 10, Seed: 1}                               // about 68 million videos (a diurnal day)
	runs := []struct {
		name string
		run  func() error
	}{
		{"run", func() error { _, err := Simulate(fleet, wl, cfg); return err }},
		{"replications", func() error { c := cfg; c.Replications = 3; _, err := Simulate(fleet, wl, c); return err }},
		{"sweep", func() error {
			_, err := Sweep(fleet, wl, cfg, SweepConfig{Group: "h100", Min: 1, Max: 2, TargetP95: 60})
			return err
		}},
		{"optimize", func() error {
			_, err := Optimize(fleet, wl, cfg, OptimizeConfig{Max: map[string]int{"h100": 1, "a100": 1, "l40s": 1, "cpu": 1}})
			return err
		}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			err := r.run()
			if !errors.Is(err, ErrSimConfig) {
				t.Fatalf("err = %v, want ErrSimConfig", err)
			}
			for _, want := range []string{"hours:", "about 6.8e+07 videos", "8000000", "--hours", "rate_per_hour"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to say %q", err, want)
				}
			}
		})
	}
}

// TestStopsAQueueOutgrowingMemory: an overloaded farm's queue grows all
// run long; past maxSimWaiting the run stops with ErrSimTooLarge.
func TestStopsAQueueOutgrowingMemory(t *testing.T) {
	defer func(n int) { maxSimWaiting = n }(maxSimWaiting)
	maxSimWaiting = 500
	fleet, wl := loadExamples(t)
	fleet.Groups = fleet.Groups[:1]
	fleet.Groups[0].Count = 1
	wl.ManualShare, wl.Auto = 1, nil
	wl.Arrival = Arrival{Process: "steady", RatePerHour: 2000}
	_, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 1})
	if !errors.Is(err, ErrSimTooLarge) || !strings.Contains(err.Error(), "more than the 500 a run may hold") {
		t.Fatalf("err = %v, want ErrSimTooLarge at 500 waiting", err)
	}
	// A farm that keeps up never gets there.
	wl.Arrival.RatePerHour = 1
	if _, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestRunsAtOnce(t *testing.T) {
	cases := []struct {
		perRun    float64
		par, want int
	}{
		{1000, 4, 4},
		{maxSimVideos / 3, 8, 3},
		{maxSimVideos, 8, 1},
		{0, 2, 2},
	}
	for _, tc := range cases {
		if got := runsAtOnce(tc.perRun, tc.par); got != tc.want {
			t.Errorf("runsAtOnce(%v, %d) = %d, want %d", tc.perRun, tc.par, got, tc.want)
		}
	}
}
