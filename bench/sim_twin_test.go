package bench

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// twinHistory is three days of a farm, made so that every figure of its
// twin can be worked out by hand:
//   - 7,200 videos in 72 h: 100 an hour, in a daily cycle of amplitude 0.5
//     peaking at 15:00 UTC;
//   - half manual (seedance-1.0-lite, 480p, 5 s), half auto (30 s, five
//     scenes each: scene_seconds 6);
//   - renders took twice the model's time on the L40S nodes, plans 6 s
//     (the model says 3: scale 2), tts 4 s (1 + 0.1 × 30: scale 1).
func twinHistory(t *testing.T) wire.History {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := wire.History{From: from, To: from.Add(72 * time.Hour)}
	for i := range 72 {
		h.Hourly = append(h.Hourly, int(math.Round(100*(1+0.5*math.Cos(2*math.Pi*float64(i%24-15)/24)))))
	}
	m, _ := models.Get("seedance-1.0-lite")
	render := renderSeconds(m, "480p", 5)
	if render <= 0 {
		t.Fatal("seedance-1.0-lite has no 480p render time")
	}
	h.Classes = []wire.HistoryClass{{Name: "max", Priority: 1, Accounts: 5, Videos: 1800}, {Name: "pro", Accounts: 40, Videos: 5400}}
	h.Arrivals = []wire.HistoryArrival{
		{Class: "max", Mode: "manual", Model: "seedance-1.0-lite", Resolution: "480p", DurationSeconds: 5, Count: 1800},
		{Class: "pro", Mode: "auto", DurationSeconds: 30, Count: 3600},
		{Class: "pro", Mode: "manual", Model: "seedance-1.0-lite", Resolution: "480p", DurationSeconds: 5, Count: 1800},
	}
	h.Tasks = []wire.HistoryTasks{
		{Kind: "plan", Mode: "auto", DurationSeconds: 30, Count: 3600, Seconds: 3600 * 6},
		{Kind: "render", Mode: "manual", Model: "seedance-1.0-lite", Resolution: "480p", GPU: "NVIDIA L40S", DurationSeconds: 5, Count: 3600, Seconds: 3600 * 2 * render},
		{Kind: "scene", Mode: "auto", Model: models.AutoSceneModel, Resolution: models.AutoResolution, DurationSeconds: 30, Count: 18000},
		{Kind: "tts", Mode: "auto", DurationSeconds: 30, Count: 3600, Seconds: 3600 * 4},
	}
	h.Nodes = []wire.HistoryNodes{
		{CPUSlots: 32, Count: 2},
		{GPU: "NVIDIA L40S", GPUs: 4, GPUMemoryGB: 80, CPUSlots: 8, Models: []string{"seedance-1.0-lite", models.AutoSceneModel}, Count: 10},
	}
	return h
}

func TestTwinFromHistory(t *testing.T) {
	fleet, wl, err := Twin(twinHistory(t))
	if err != nil {
		t.Fatal(err)
	}
	a := wl.Arrival
	if a.Process != "diurnal" || math.Abs(a.RatePerHour-100) > 1e-9 || math.Abs(a.Amplitude-0.5) > 0.01 || a.PeakHour != 15 {
		t.Errorf("arrival = %+v, want diurnal at 100/h, amplitude 0.5, peak 15:00", a)
	}
	if wl.ManualShare != 0.5 || len(wl.Manual) != 1 || wl.Manual[0].Model != "seedance-1.0-lite" || wl.Manual[0].Durations[0] != 5 {
		t.Errorf("manual: share %v mix %+v", wl.ManualShare, wl.Manual)
	}
	if wl.Auto == nil || wl.Auto.SceneSeconds != 6 || !reflect.DeepEqual(wl.Auto.Durations, []int{30}) {
		t.Errorf("auto = %+v, want 30 s videos of 6 s scenes", wl.Auto)
	}
	want := []AccountClass{{Name: "max", Count: 5, Share: 0.25, Priority: 1}, {Name: "pro", Count: 40, Share: 0.75}}
	if !reflect.DeepEqual(wl.Accounts, want) {
		t.Errorf("classes = %+v, want %+v", wl.Accounts, want)
	}
	if len(fleet.Groups) != 2 || fleet.Groups[0].Name != "cpu" || fleet.Groups[1].Name != "l40s" || fleet.Groups[1].Count != 10 ||
		fleet.Groups[1].GPUsPerNode != 4 || len(fleet.Groups[1].Models) != 2 {
		t.Errorf("groups = %+v", fleet.Groups)
	}
	// No scene was timed (Seconds 0): no scale for the scene model.
	wantScale := map[string]float64{"seedance-1.0-lite@NVIDIA L40S": 2, "plan": 2, "tts": 1}
	if !reflect.DeepEqual(fleet.TimeScale, wantScale) || fleet.GPUSpeed["NVIDIA L40S"] != 1 {
		t.Errorf("time_scale = %v speed %v, want %v at speed 1", fleet.TimeScale, fleet.GPUSpeed, wantScale)
	}
	// The twin runs, and its renders take what the farm measured.
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Completed == 0 {
		t.Fatalf("the twin completed no video: %+v", rep)
	}
	s := &sim{fleet: fleet}
	n := &simNode{speed: 1, scale: fleet.gpuScales("NVIDIA L40S")}
	m, _ := models.Get("seedance-1.0-lite")
	v := &simVideo{model: "seedance-1.0-lite", seconds: 5, gpuSeconds: renderSeconds(m, "480p", 5)}
	if got, want := s.taskSeconds(n, v, "render"), 2*renderSeconds(m, "480p", 5); math.Abs(got-want) > 1e-9 {
		t.Errorf("a twin render takes %v s, want the farm's %v", got, want)
	}
	if got := s.taskSeconds(n, &simVideo{seconds: 30}, "plan"); got != 6 {
		t.Errorf("a twin plan takes %v s, want the farm's 6", got)
	}
}

func TestTwinRefusesAnEmptyWindow(t *testing.T) {
	h := twinHistory(t)
	h.Arrivals = nil
	if _, _, err := Twin(h); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("err = %v, want ErrNoHistory", err)
	}
	h = twinHistory(t)
	h.Hourly = h.Hourly[:24] // a day: too short to see a daily cycle
	if _, wl, err := Twin(h); err != nil || wl.Arrival.Process != "steady" {
		t.Fatalf("one day: process %q err %v, want steady", wl.Arrival.Process, err)
	}
}

func TestWhatIf(t *testing.T) {
	fleet, wl, err := Twin(twinHistory(t))
	if err != nil {
		t.Fatal(err)
	}
	f2, w2, err := WhatIf(fleet, wl, 1.4, map[string]int{"l40s": 8})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w2.Arrival.RatePerHour-140) > 1e-9 || f2.Groups[1].Count != 18 || fleet.Groups[1].Count != 10 {
		t.Errorf("what-if: rate %v, l40s %d (the original %d)", w2.Arrival.RatePerHour, f2.Groups[1].Count, fleet.Groups[1].Count)
	}
	if _, _, err := WhatIf(fleet, wl, 1, map[string]int{"h100": 1}); !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), "cpu, l40s") {
		t.Errorf("unknown group: %v", err)
	}
	if _, _, err := WhatIf(fleet, wl, 0, nil); !errors.Is(err, ErrSimConfig) {
		t.Errorf("scale 0: %v", err)
	}
	bad := fleet
	bad.TimeScale = map[string]float64{"seedance-1.0-lite@H200": 2}
	if err := bad.Validate(); !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), "H200") {
		t.Errorf("a time scale for an unknown GPU kind: %v", err)
	}
}
