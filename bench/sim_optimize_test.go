package bench

import (
	"math"
	"strings"
	"testing"
)

// erlangCTail is P(W > t) in an M/M/c queue: C(c, a) e^{-(c mu - lambda) t},
// with C(c, a) = E[W] (c mu - lambda).
func erlangCTail(c int, lambda, mu, t float64) float64 {
	k := float64(c)*mu - lambda
	return erlangCWait(c, lambda, mu) * k * math.Exp(-k*t)
}

// classFarm is farm A: one-GPU H100 nodes (3 per hour each), 1.5 Erlangs
// of exponential 60 s renders (90 videos an hour), half enterprise (GPU
// wait within 10 s for 90%, turnaround within 600 s for 90%), half free
// (GPU wait within 600 s for 50%). Same priority: both classes see the
// M/M/c wait of the whole queue.
func classFarm() (Fleet, Workload) {
	fleet, wl := mmcSetup(1, 1.5)
	wl.Accounts = []AccountClass{
		{Name: "enterprise", Count: 1, Share: 0.5, SLOs: []SLO{
			{Metric: MetricGPUWait, Seconds: 10, Target: 0.90}, {Metric: MetricTurnaround, Seconds: 600, Target: 0.90}}},
		{Name: "free", Count: 1, Share: 0.5, SLOs: []SLO{{Metric: MetricGPUWait, Seconds: 600, Target: 0.5}}},
	}
	return fleet, wl
}

func TestSweepByClassSLOs(t *testing.T) {
	// By hand, lambda = 1.5/60 per s, mu = 1/60, P(W > t) = C e^{-(c-1.5)t/60}:
	//   c=2: C = 0.643; P(W > 10) = 0.643 e^{-0.083} = 0.59: enterprise 41% < 90%, misses
	//   c=3: C = 0.237; P(W > 10) = 0.237 e^{-0.25}  = 0.185: enterprise 81.5%, misses
	//   c=4: C = 0.0746; P(W > 10) = 0.0746 e^{-0.417} = 0.049: enterprise 95.1%, meets
	// free: P(W > 600) = 0.643 e^{-5} = 0.4% at c=2: met from 2 on.
	// Turnaround adds the 60 s render: P(T > 600) < 1% from c=2; enterprise's
	// binding SLO is its GPU wait. Answer: 4. The single p95 target a
	// planner would have used instead, 120 s over all videos, is met from 3
	// (P(W > 120) = 0.237 e^{-3} = 1.2%): it undersizes enterprise.
	const lambda, mu = 1.5 / 60, 1.0 / 60
	for c, want := range map[int]float64{2: 0.41, 3: 0.815, 4: 0.951} {
		if got := 1 - erlangCTail(c, lambda, mu, 10); math.Abs(got-want) > 0.005 {
			t.Fatalf("theory at %d: %.3f, the comment says %.3f", c, got, want)
		}
	}
	fleet, wl := classFarm()
	for _, repl := range []int{1, 5} {
		hours := 60.0
		if repl > 1 {
			hours = 20
		}
		res, err := Sweep(fleet, wl, SimConfig{Hours: hours, Seed: 3, WarmupHours: 1, Replications: repl},
			SweepConfig{Group: "h100", Min: 2, Max: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", res)
		if !res.ByClass || !res.Found || res.Smallest != 4 || len(res.Uncertain) > 0 {
			t.Fatalf("%d replications: smallest %d (found %v, uncertain %v), want 4", repl, res.Smallest, res.Found, res.Uncertain)
		}
		for _, p := range res.Points {
			ent, free := p.Classes[0], p.Classes[1]
			if ent.Binding != 0 || ent.Met != (p.Count >= 4) || !free.Met {
				t.Errorf("%d GPUs: enterprise binding %d met %v, free met %v", p.Count, ent.Binding, ent.Met, free.Met)
			}
			if want := 1 - erlangCTail(p.Count, lambda, mu, 10); math.Abs(ent.SLOs[0].Attained-want) > 0.04 {
				t.Errorf("%d GPUs: enterprise within 10 s %.3f, theory %.3f", p.Count, ent.SLOs[0].Attained, want)
			}
		}
		if !strings.Contains(res.String(), "class enterprise: binding gpu_wait ≤ 10 s") {
			t.Errorf("no binding SLO in the table:\n%s", res)
		}
	}
	// The single target keeps its old meaning and answer.
	res, err := Sweep(fleet, wl, SimConfig{Hours: 60, Seed: 3, WarmupHours: 1}, SweepConfig{Group: "h100", Min: 2, Max: 5, TargetP95: 120})
	if err != nil || res.ByClass || res.Smallest != 3 {
		t.Fatalf("p95 target 120 s: smallest %d by class %v (%v), want 3", res.Smallest, res.ByClass, err)
	}
	// Without a target or any SLO there is nothing to size for.
	wl.Accounts = []AccountClass{{Name: "all", Count: 1, Share: 1}}
	if _, err := Sweep(fleet, wl, SimConfig{Hours: 1, Seed: 1}, SweepConfig{Group: "h100", Min: 1, Max: 2}); err == nil ||
		!strings.Contains(err.Error(), "sweep.target_p95:") {
		t.Fatalf("no target, no SLO: err = %v", err)
	}
}

// mixFarm is farm B: nodes of 4 H100s (11/h) and nodes of 4 L40Ss at half
// speed (l40sPrice/h), 5 H100-Erlangs of exponential 60 s renders (300
// videos an hour); enterprise wants GPU wait within 600 s for 90%, free
// turnaround within an hour for half.
func mixFarm(l40sPrice float64) (Fleet, Workload) {
	fleet := Fleet{Currency: "USD", GPUSpeed: map[string]float64{"L40S": 0.5}, Groups: []NodeGroup{
		{Name: "h100", GPUModel: "H100", Count: 1, GPUsPerNode: 4, GPUMemoryGB: 80, CPUSlots: 8, CostPerHour: 11},
		{Name: "l40s", GPUModel: "L40S", Count: 1, GPUsPerNode: 4, GPUMemoryGB: 48, CPUSlots: 8, CostPerHour: l40sPrice},
	}}
	_, wl := mmcSetup(1, 5)
	wl.Accounts = []AccountClass{
		{Name: "enterprise", Count: 1, Share: 0.5, SLOs: []SLO{{Metric: MetricGPUWait, Seconds: 600, Target: 0.9}}},
		{Name: "free", Count: 1, Share: 0.5, SLOs: []SLO{{Metric: MetricTurnaround, Seconds: 3600, Target: 0.5}}},
	}
	return fleet, wl
}

func TestOptimizeCheapestMix(t *testing.T) {
	// Capacity in H100s: 4 per h100 node, 2 per l40s node; the load is 5.
	// A fleet of capacity 4 or less is overloaded (rho >= 1.25): its queue
	// grows by at least 60 videos an hour, the wait passes 600 s within the
	// first hour and stays there, so enterprise misses. Capacity 6 or more
	// (rho <= 0.83) waits seconds: both classes meet. By cost per hour:
	//   l40s 1         6  capacity 2  misses
	//   h100 1        11  capacity 4  misses
	//   l40s 2        12  capacity 4  misses
	//   h100 1 l40s 1 17  capacity 6  meets  <- the answer
	//   l40s 3        18  capacity 6  (not tried)
	// At 5/h an L40S node, l40s 3 (15) is cheaper than h100 1 l40s 1 (16):
	// tried after l40s 1 (5), l40s 2 (10) and h100 1 (11), it is the answer.
	for _, tc := range []struct {
		price      float64
		want       []int
		cost       float64
		triedFirst [][]int
	}{
		{6, []int{1, 1}, 17, [][]int{{0, 1}, {1, 0}, {0, 2}}},
		{5, []int{0, 3}, 15, [][]int{{0, 1}, {0, 2}, {1, 0}}},
	} {
		fleet, wl := mixFarm(tc.price)
		for _, repl := range []int{1, 3} {
			res, err := Optimize(fleet, wl, SimConfig{Hours: 10, Seed: 2, Replications: repl},
				OptimizeConfig{Max: map[string]int{"h100": 2, "l40s": 3}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", res)
			if !res.Found || !equalInts(res.Best.Counts, tc.want) || res.Best.CostPerHour != tc.cost || len(res.Tried) != 4 {
				t.Fatalf("l40s at %v, %d replications: best %+v, want %v at %v after 3 misses", tc.price, repl, res.Best, tc.want, tc.cost)
			}
			for i, c := range tc.triedFirst {
				if !equalInts(res.Tried[i].Counts, c) || res.Tried[i].Verdict != VerdictMisses {
					t.Errorf("tried[%d] = %v %s, want %v misses", i, res.Tried[i].Counts, res.Tried[i].Verdict, c)
				}
			}
			// Cost by class: both classes render the same videos, so each
			// takes about half the cost; the shares add up to 1.
			cc := res.Best.ClassCosts
			if math.Abs(cc[0].Share+cc[1].Share-1) > 1e-9 || math.Abs(cc[0].Share-0.5) > 0.05 {
				t.Errorf("class shares %v", cc)
			}
			// 10 h at cost/h, 3000 videos of 5 s: about cost/300 a video,
			// 12 times that a rendered minute.
			if perVideo := tc.cost / 300; math.Abs(cc[0].CostPerVideo-perVideo) > 0.1*perVideo ||
				math.Abs(cc[0].CostPerRenderedMinute-12*cc[0].CostPerVideo) > 0.01*cc[0].CostPerRenderedMinute {
				t.Errorf("cost per video %v per minute %v, want about %v and 12 times it", cc[0].CostPerVideo, cc[0].CostPerRenderedMinute, perVideo)
			}
			if s := res.String(); !strings.Contains(s, "USD per hour") || !strings.Contains(s, "per rend. min") {
				t.Errorf("table:\n%s", s)
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOptimizeNeverDearerThanBruteForce simulates every fleet of a tiny
// space with the optimizer's seeds and checks that no fleet that meets is
// cheaper than its answer.
func TestOptimizeNeverDearerThanBruteForce(t *testing.T) {
	for _, price := range []float64{5, 6, 9} {
		fleet, wl := mixFarm(price)
		wl.Arrival.RatePerHour = 4.5 * 60 // nearer the edges: capacity 4 is rho 1.125
		cfg := SimConfig{Hours: 3, Seed: 9, Replications: 2}
		oc := OptimizeConfig{Max: map[string]int{"h100": 1, "l40s": 3}}
		res, err := Optimize(fleet, wl, cfg, oc)
		if err != nil {
			t.Fatal(err)
		}
		groups := []OptimizeGroup{{Name: "h100", GPUsPerNode: 4, CostPerHour: 11, Max: 1}, {Name: "l40s", GPUsPerNode: 4, CostPerHour: price, Max: 3}}
		cands := enumerate(fleet, groups)
		todo := make([]int, len(cands))
		for i := range todo {
			todo[i] = i
		}
		all, err := simulateCandidates(fleet, wl, cfg, 0, cands, todo, 2)
		if err != nil {
			t.Fatal(err)
		}
		cheapest := math.Inf(1)
		for _, c := range all {
			if c.Verdict == VerdictMeets {
				cheapest = math.Min(cheapest, c.CostPerHour)
			}
		}
		switch {
		case math.IsInf(cheapest, 1) && res.Found:
			t.Errorf("price %v: optimizer found %v, brute force nothing", price, res.Best.Counts)
		case !math.IsInf(cheapest, 1) && (!res.Found || res.Best.CostPerHour != cheapest):
			t.Errorf("price %v: optimizer %+v, brute force cheapest meeting %v", price, res.Best, cheapest)
		}
	}
}

func TestOptimizeValidation(t *testing.T) {
	fleet, wl := mixFarm(6)
	cfg := SimConfig{Hours: 1, Seed: 1}
	for _, tc := range []struct {
		oc    OptimizeConfig
		field string
	}{
		{OptimizeConfig{Max: map[string]int{"nope": 1}}, "optimize.max"},
		{OptimizeConfig{Min: map[string]int{"h100": 3}, Max: map[string]int{"h100": 2}}, "optimize.h100"},
		{OptimizeConfig{Max: map[string]int{"h100": 1000, "l40s": 1000}}, "optimize.max"},
	} {
		if _, err := Optimize(fleet, wl, cfg, tc.oc); err == nil || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%+v: err = %v, want it to name %s", tc.oc, err, tc.field)
		}
	}
	wl.Accounts = []AccountClass{{Name: "all", Count: 1, Share: 1}}
	if _, err := Optimize(fleet, wl, cfg, OptimizeConfig{}); err == nil || !strings.Contains(err.Error(), "workload.slos:") {
		t.Errorf("no SLO: err = %v", err)
	}
}

func TestFleetCurrency(t *testing.T) {
	fleet, _ := mixFarm(6)
	for cur, ok := range map[string]bool{"": true, "USD": true, "EUR": true, "usd": false, "US": false, "USDT": false, "U$D": false} {
		fleet.Currency = cur
		if err := fleet.Validate(); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "fleet.currency:")) {
			t.Errorf("currency %q: err = %v", cur, err)
		}
	}
}
