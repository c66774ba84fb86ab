package bench

import (
	"errors"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func loadExamples(t *testing.T) (Fleet, Workload) {
	t.Helper()
	ff, err := os.Open("testdata/fleet-example.json")
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	fleet, err := DecodeFleet(ff)
	if err != nil {
		t.Fatalf("fleet example: %v", err)
	}
	wf, err := os.Open("testdata/workload-example.json")
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	wl, err := DecodeWorkload(wf)
	if err != nil {
		t.Fatalf("workload example: %v", err)
	}
	return fleet, wl
}

func TestSimulateExampleDeterministic(t *testing.T) {
	fleet, wl := loadExamples(t)
	cfg := SimConfig{Hours: 12, Seed: 7}
	a, err := Simulate(fleet, wl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(fleet, wl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different reports:\n%s\n%s", a, b)
	}
	if a.String() != b.String() {
		t.Fatal("same seed, different tables")
	}
	cfg.Seed = 8
	c, err := Simulate(fleet, wl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave identical reports")
	}
	if a.Submitted < 1000 || a.Completed == 0 || a.Modes[0].Completed == 0 || a.Modes[1].Completed == 0 {
		t.Fatalf("implausible run: %+v", a)
	}
	if a.GPUUtilisation <= 0 || a.GPUUtilisation > 1 || a.CPUUtilisation <= 0 || a.CPUUtilisation > 1 {
		t.Fatalf("utilisation out of range: gpu %v cpu %v", a.GPUUtilisation, a.CPUUtilisation)
	}
	if a.CostPerRenderedMinute <= 0 || a.VideosPerGPUHour <= 0 {
		t.Fatalf("cost/throughput not computed: %+v", a)
	}
	t.Logf("\n%s", a)
}

// erlangCWait is the mean queue wait of an M/M/c queue with arrival rate
// lambda and service rate mu per server (Erlang C).
func erlangCWait(c int, lambda, mu float64) float64 {
	a := lambda / mu
	rho := a / float64(c)
	term, sum := 1.0, 1.0 // a^k/k!, k = 0
	for k := 1; k < c; k++ {
		term *= a / float64(k)
		sum += term
	}
	last := term * a / float64(c) / (1 - rho) // a^c/c! / (1-rho)
	pWait := last / (sum + last)
	return pWait / (float64(c)*mu - lambda)
}

// mmcSetup is a one-class M/M/c farm: c one-GPU nodes, 60 s mean service.
func mmcSetup(c int, erlangs float64) (Fleet, Workload) {
	fleet := Fleet{Groups: []NodeGroup{{Name: "h100", GPUModel: "H100", Count: c, GPUsPerNode: 1, GPUMemoryGB: 80, CPUSlots: 64, CostPerHour: 3}}}
	wl := Workload{
		Arrival:            Arrival{Process: "steady", RatePerHour: erlangs * 60},
		ManualShare:        1,
		Manual:             []ManualMix{{Model: "seedance-1.0-lite", Resolution: "480p", Durations: []int{5}, Weight: 1}},
		Accounts:           []AccountClass{{Name: "all", Count: 1, Share: 1}},
		ExponentialService: true,
	}
	return fleet, wl
}

func TestSimulateMMcMatchesErlangC(t *testing.T) {
	// seedance-1.0-lite at 480p: 12 GPU-s per output second on one GPU, so
	// a 5 s video renders in 60 s on an H100: mu = 1/60 per second.
	const c, service, rho = 4, 60.0, 0.7
	lambda := rho * c / service // per second
	fleet, wl := mmcSetup(c, rho*c)
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 1200, Seed: 1, WarmupHours: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := erlangCWait(c, lambda, 1/service)
	got := rep.Modes[0].Wait.Mean
	t.Logf("M/M/%d rho=%.2f: %.0f videos, simulated mean wait %.3f s, Erlang C %.3f s, GPU utilisation %.3f",
		c, rho, rep.Modes[0].Wait.Count, got, want, rep.GPUUtilisation)
	if math.Abs(got-want)/want > 0.05 {
		t.Fatalf("mean wait %.3f s, Erlang C says %.3f s (more than 5%% off)", got, want)
	}
	if math.Abs(rep.GPUUtilisation-rho) > 0.02 {
		t.Fatalf("GPU utilisation %.3f, want about %.2f", rep.GPUUtilisation, rho)
	}
}

func TestSimulateDiurnalMeanRate(t *testing.T) {
	// Thinning keeps the mean: over whole days a diurnal process submits
	// rate_per_hour x hours videos on average.
	const rate, hours = 600.0, 24.0
	fleet := Fleet{Groups: []NodeGroup{{Name: "h100", GPUModel: "H100", Count: 20, GPUsPerNode: 1, GPUMemoryGB: 80, CPUSlots: 8}}}
	wl := Workload{
		Arrival:     Arrival{Process: "diurnal", RatePerHour: rate, Amplitude: 0.8, PeakHour: 14},
		ManualShare: 1,
		Manual:      []ManualMix{{Model: "seedance-1.0-lite", Resolution: "480p", Durations: []int{5}, Weight: 1}},
		Accounts:    []AccountClass{{Name: "all", Count: 10, Share: 1}},
	}
	rep, err := Simulate(fleet, wl, SimConfig{Hours: hours, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := rate * hours
	if got := rep.Submitted; math.Abs(got-want)/want > 0.04 {
		t.Fatalf("submitted %v videos, want about %v", got, want)
	}
	// A burst adds arrivals.
	wl.Arrival.Bursts = []Burst{{StartHour: 2, Minutes: 60, Multiplier: 4}}
	burst, err := Simulate(fleet, wl, SimConfig{Hours: hours, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if burst.Submitted < rep.Submitted+200 {
		t.Fatalf("burst: %.0f submitted, without: %.0f", burst.Submitted, rep.Submitted)
	}
}

func TestSimValidation(t *testing.T) {
	fleet, wl := loadExamples(t)
	cases := []struct {
		name  string
		edit  func(f *Fleet, w *Workload, c *SimConfig)
		field string
	}{
		{"no groups", func(f *Fleet, _ *Workload, _ *SimConfig) { f.Groups = nil }, "fleet.groups"},
		{"unknown gpu", func(f *Fleet, _ *Workload, _ *SimConfig) { f.Groups[1].GPUModel = "B200" }, "fleet.groups[1].gpu_model"},
		{"bad speed", func(f *Fleet, _ *Workload, _ *SimConfig) { f.GPUSpeed = map[string]float64{"L40S": -1} }, `fleet.gpu_speed["L40S"]`},
		{"zero count", func(f *Fleet, _ *Workload, _ *SimConfig) { f.Groups[0].Count = 0 }, "fleet.groups[0].count"},
		{"no gpu memory", func(f *Fleet, _ *Workload, _ *SimConfig) { f.Groups[0].GPUMemoryGB = 0 }, "fleet.groups[0].gpu_memory_gb"},
		{"unknown fleet model", func(f *Fleet, _ *Workload, _ *SimConfig) { f.Groups[2].Models = []string{"nope"} }, "fleet.groups[2].models[0]"},
		{"bad process", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Arrival.Process = "weekly" }, "workload.arrival.process"},
		{"bad rate", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Arrival.RatePerHour = 0 }, "workload.arrival.rate_per_hour"},
		{"bad burst", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Arrival.Bursts[0].Minutes = 0 }, "workload.arrival.bursts[0].minutes"},
		{"bad share", func(_ *Fleet, w *Workload, _ *SimConfig) { w.ManualShare = 1.5 }, "workload.manual_share"},
		{"bad resolution", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Manual[1].Resolution = "4k" }, "workload.manual[1].resolution"},
		{"bad duration", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Manual[0].Durations = []int{5, 7} }, "workload.manual[0].durations[1]"},
		{"no auto", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Auto = nil }, "workload.auto"},
		{"auto duration", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Auto.Durations = []int{2} }, "workload.auto.durations[0]"},
		{"no accounts", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Accounts = nil }, "workload.accounts"},
		{"dup class", func(_ *Fleet, w *Workload, _ *SimConfig) { w.Accounts[1].Name = "enterprise" }, "workload.accounts[1].name"},
		{"hours", func(_ *Fleet, _ *Workload, c *SimConfig) { c.Hours = 0 }, "hours"},
		{"warmup", func(_ *Fleet, _ *Workload, c *SimConfig) { c.WarmupHours = 5 }, "warmup_hours"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, w := cloneFleet(fleet), cloneWorkload(wl)
			cfg := SimConfig{Hours: 1, Seed: 1}
			tc.edit(&f, &w, &cfg)
			_, err := Simulate(f, w, cfg)
			if !errors.Is(err, ErrSimConfig) {
				t.Fatalf("err = %v, want ErrSimConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("err = %v, want it to name %s", err, tc.field)
			}
		})
	}
}

func TestDecodeRejectsUnknownFields(t *testing.T) {
	_, err := DecodeFleet(strings.NewReader(`{"groups": [], "gpus": 3}`))
	if !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), "gpus") {
		t.Fatalf("err = %v", err)
	}
	_, err = DecodeWorkload(strings.NewReader(`{"arrival": {"proces": "steady"}}`))
	if !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), "proces") {
		t.Fatalf("err = %v", err)
	}
}

func cloneFleet(f Fleet) Fleet {
	out := f
	out.GPUSpeed = map[string]float64{}
	for k, v := range f.GPUSpeed {
		out.GPUSpeed[k] = v
	}
	out.Groups = append([]NodeGroup(nil), f.Groups...)
	return out
}

func cloneWorkload(w Workload) Workload {
	out := w
	out.Manual = append([]ManualMix(nil), w.Manual...)
	out.Accounts = append([]AccountClass(nil), w.Accounts...)
	out.Arrival.Bursts = append([]Burst(nil), w.Arrival.Bursts...)
	if w.Auto != nil {
		a := *w.Auto
		out.Auto = &a
	}
	return out
}

func mustDecodeFile[T any](tb testing.TB, path string, decode func(io.Reader) (T, error)) T {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	v, err := decode(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return v
}
