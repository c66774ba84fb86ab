package bench

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// faultSetup is c one-GPU nodes and a one-account manual workload of
// seedance-1.0-lite 480p 5 s videos (60 s on an H100) at load erlangs.
func faultSetup(c int, erlangs float64) (Fleet, Workload) {
	fleet, wl := mmcSetup(c, erlangs)
	fleet.Groups[0].CPUSlots = 8
	wl.ExponentialService = false
	return fleet, wl
}

func TestFaultAvailabilityMatchesTheory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(g *NodeGroup)
		expect float64
	}{
		// Up for an exponential time of mean mtbf, down for one of mean
		// repair: up mtbf/(mtbf+repair) of the time.
		{"failures", func(g *NodeGroup) { g.MTBF, g.Repair = "10h", "2h" }, 10.0 / 12},
		// Two competing causes of rates 1/m1, 1/m2 and mean downtimes
		// r1, r2: up 1/(1 + r1/m1 + r2/m2) of the time.
		{"failures and restarts", func(g *NodeGroup) {
			g.MTBF, g.Repair, g.AgentRestartEvery, g.AgentRestartTime = "10h", "2h", "5h", "30m"
		}, 1 / (1 + 2.0/10 + 0.5/5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet, wl := faultSetup(20, 0.5)
			tc.set(&fleet.Groups[0])
			rep, err := Simulate(fleet, wl, SimConfig{Hours: 3000, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Faults
			t.Logf("availability %.4f (theory %.4f), %.0f failures, %.0f restarts, %.0f requeued, %.1f GPU-h lost",
				f.NodeAvailability, tc.expect, f.NodeFailures, f.AgentRestarts, f.TasksRequeued, f.GPUHoursLost)
			if math.Abs(f.NodeAvailability-tc.expect) > 0.015 {
				t.Fatalf("nodes up %.4f of the time, theory says %.4f", f.NodeAvailability, tc.expect)
			}
			if f.NodeFailures == 0 || f.TasksRequeued == 0 || f.GPUHoursLost <= 0 {
				t.Fatalf("no failures or no lost work: %+v", *f)
			}
		})
	}
}

// TestFaultLostWorkCompletes: tasks of nodes that fail or restart are
// requeued and run again; every video completes once (the simulator
// checks its unfinished videos against submitted minus completed at the
// end, and fails on a video the scheduler failed).
func TestFaultLostWorkCompletes(t *testing.T) {
	fleet, wl := faultSetup(6, 3)
	g := &fleet.Groups[0]
	g.MTBF, g.Repair, g.AgentRestartEvery, g.AgentRestartTime = "2h", "20m", "1h", "1m"
	wl.ManualShare = 0.5
	wl.Auto = &AutoMix{SceneModel: "seedance-1.0-lite", SceneResolution: "480p", SceneSeconds: 5, Durations: []int{15, 30}}
	wl.Arrival.RatePerHour = 60
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 200, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Faults
	t.Logf("%.0f submitted, %.0f completed, %.0f in flight; %.0f failures, %.0f restarts, %.0f requeued, %.1f GPU-h lost",
		rep.Submitted, rep.Completed, rep.InFlight, f.NodeFailures, f.AgentRestarts, f.TasksRequeued, f.GPUHoursLost)
	if f.TasksRequeued < 50 {
		t.Fatalf("only %.0f tasks requeued: the test needs lost work", f.TasksRequeued)
	}
	if rep.Completed+rep.InFlight != rep.Submitted || rep.InFlight > 20 {
		t.Fatalf("%.0f submitted, %.0f completed, %.0f in flight", rep.Submitted, rep.Completed, rep.InFlight)
	}
	// One GPU-wait sample per GPU task however often it ran: a manual
	// video has one, an auto video one per scene.
	if got := rep.Overall.GPUWait.Count; got > rep.Submitted*6 {
		t.Fatalf("%.0f GPU-wait samples for %.0f videos", got, rep.Submitted)
	}
}

// twoModels is a workload alternating two models of the same size.
func twoModels(wl Workload) Workload {
	wl.Manual = []ManualMix{
		{Model: "seedance-1.0-lite", Resolution: "480p", Durations: []int{5}, Weight: 1},
		{Model: "wan-2.1-14b", Resolution: "480p", Durations: []int{5}, Weight: 1},
	}
	return wl
}

func TestColdStartOncePerNode(t *testing.T) {
	fleet, wl := faultSetup(8, 5)
	fleet.Groups[0].ModelLoad = map[string]string{"*": "90s"}
	fleet.Groups[0].WarmSlots = 100
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 50, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Faults
	if f.ColdStarts == 0 || f.ColdStarts > float64(rep.Nodes) {
		t.Fatalf("%.0f cold starts on %d nodes, want 1..%d", f.ColdStarts, rep.Nodes, rep.Nodes)
	}
	if want := f.ColdStarts * 90 / 3600; math.Abs(f.LoadGPUHours-want) > 1e-9 {
		t.Fatalf("%.4f GPU-hours loading, want %.4f (90 s per cold start)", f.LoadGPUHours, want)
	}
	if f.NodeAvailability != 1 || f.TasksRequeued != 0 {
		t.Fatalf("no churn configured, got %+v", *f)
	}
}

// TestColdStartWarmPreference: two models alternating on nodes that keep
// one warm cold-start often; without a warm preference a task's model
// is the node's warm one about half the time (two models, equally
// likely), and the scheduler's preference does better than that.
func TestColdStartWarmPreference(t *testing.T) {
	// Seedance 60 s and Wan 180 s a video: 180 an hour keep 8 nodes 75%
	// busy, cold starts aside.
	fleet, wl := faultSetup(8, 3.0)
	wl = twoModels(wl)
	fleet.Groups[0].ModelLoad = map[string]string{"*": "30s"}
	fleet.Groups[0].WarmSlots = 1
	cfg := SimConfig{Hours: 100, Seed: 4}
	check := func(r SimReport) {
		if r.InFlight > 50 {
			t.Fatalf("the farm is overloaded: %.0f videos in flight", r.InFlight)
		}
	}
	with, err := Simulate(fleet, wl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NoWarmPreference = true
	without, err := Simulate(fleet, wl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(with)
	check(without)
	share := func(f *FaultStats) float64 { return f.ColdStarts / f.GPUPlacements }
	t.Logf("cold starts: %.0f of %.0f placements with the warm preference (%.3f), %.0f of %.0f without (%.3f)",
		with.Faults.ColdStarts, with.Faults.GPUPlacements, share(with.Faults),
		without.Faults.ColdStarts, without.Faults.GPUPlacements, share(without.Faults))
	if s := share(without.Faults); s < 0.4 || s > 0.6 {
		t.Fatalf("without the preference %.3f of placements cold-start, theory says about 0.5", s)
	}
	if share(with.Faults) >= share(without.Faults)-0.05 {
		t.Fatalf("the warm preference saves too little: %.3f cold with it, %.3f without", share(with.Faults), share(without.Faults))
	}
	if math.Abs(with.Faults.WarmHitShare+share(with.Faults)-1) > 1e-9 {
		t.Fatalf("warm hits %.4f and cold starts %.4f of placements do not add up", with.Faults.WarmHitShare, share(with.Faults))
	}
}

func TestFaultFieldsValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(g *NodeGroup)
	}{
		{"fleet.groups[0].mtbf", func(g *NodeGroup) { g.MTBF, g.Repair = "soon", "1h" }},
		{"fleet.groups[0].mtbf", func(g *NodeGroup) { g.MTBF, g.Repair = "10s", "1h" }},
		{"fleet.groups[0].repair", func(g *NodeGroup) { g.MTBF = "10h" }},
		{"fleet.groups[0].repair", func(g *NodeGroup) { g.MTBF, g.Repair = "10h", "-1h" }},
		{"fleet.groups[0].agent_restart_time", func(g *NodeGroup) { g.AgentRestartEvery = "10h" }},
		{"fleet.groups[0].agent_restart_every", func(g *NodeGroup) { g.AgentRestartEvery, g.AgentRestartTime = "x", "1m" }},
		{`fleet.groups[0].model_load["no-such-model"]`, func(g *NodeGroup) { g.ModelLoad = map[string]string{"no-such-model": "1m"} }},
		{`fleet.groups[0].model_load["*"]`, func(g *NodeGroup) { g.ModelLoad = map[string]string{"*": "-1s"} }},
		{`fleet.groups[0].model_load["wan-2.1-14b"]`, func(g *NodeGroup) { g.ModelLoad = map[string]string{"wan-2.1-14b": "90"} }},
		{"fleet.groups[0].warm_slots", func(g *NodeGroup) { g.WarmSlots = 2 }},
		{"fleet.groups[0].warm_slots", func(g *NodeGroup) { g.ModelLoad, g.WarmSlots = map[string]string{"*": "1m"}, -1 }},
	} {
		fleet, _ := faultSetup(2, 1)
		tc.set(&fleet.Groups[0])
		err := fleet.Validate()
		if !errors.Is(err, ErrSimConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

func TestFaultDecodeFleet(t *testing.T) {
	f, err := DecodeFleet(strings.NewReader(`
gpu_speed: {H100: 1}
groups:
  - {name: a, gpu_model: H100, count: 2, gpus_per_node: 1, gpu_memory_gb: 80, cpu_slots: 4,
     mtbf: 720h, repair: 4h, agent_restart_every: 72h, agent_restart_time: 2m,
     model_load: {"*": 60s, veo-3: 150s}, warm_slots: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	gf, err := f.Groups[0].faults("g")
	if err != nil {
		t.Fatal(err)
	}
	if gf.mtbf.Hours() != 720 || gf.restartTime.Minutes() != 2 || gf.loadTime("veo-3").Seconds() != 150 ||
		gf.loadTime("wan-2.1-14b").Seconds() != 60 || gf.slots != 3 {
		t.Fatalf("parsed %+v", gf)
	}
}

// TestFaultExampleFleet: the example fleet with faults decodes, and a short
// run of it reports them.
func TestFaultExampleFleet(t *testing.T) {
	fleet := mustDecodeFile(t, "examples/fleet-faults.yaml", DecodeFleet)
	_, wl := faultSetup(1, 1)
	rep, err := Simulate(fleet, wl, SimConfig{Hours: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Faults; f == nil || f.ColdStarts == 0 || !strings.Contains(rep.String(), "cold starts") {
		t.Fatalf("no fault figures in the report: %+v", f)
	}
}
