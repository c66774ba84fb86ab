package bench

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
)

// The cost optimizer: the cheapest mix of node groups (GPU kinds) that
// meets every account class's SLOs.
//
// Search. Every group's count ranges over Min..Max (OptimizeConfig); the
// candidates, every combination with at least one GPU, are sorted by cost
// per hour (Σ count × cost_per_hour; ties: more GPUs first, then the
// counts in group order) and simulated in that order, with the sweep's
// replications and verdicts (classChecks), until the first that meets:
// every candidate before it was tried and did not meet, or was skipped,
// so none cheaper meets. The monotonicity shortcut skips a candidate
// dominated by one that did not meet (no group larger): a fleet with no
// more nodes of any kind than one that misses misses too. In cost order a
// dominated candidate is never dearer than the one that dominates it, so
// the shortcut saves runs only among equal costs and groups that cost
// nothing; it is kept for those. Candidates are simulated in batches of
// as many as run at once; a batch's results are taken in cost order, so
// the answer and the list of tried candidates do not depend on the core
// count.

// maxOptimizeCandidates bounds the search space.
const maxOptimizeCandidates = 100000

// OptimizeConfig bounds the cost search.
type OptimizeConfig struct {
	// Min and Max map a group name to the range of its count; a group
	// not in Max ranges up to twice its count in the fleet, not in Min
	// from 0 (a count of 0 drops the group).
	Min, Max map[string]int
	// Parallel simulations; 0 means GOMAXPROCS.
	Parallel int
	// Progress, when set, is called after each batch with the candidates
	// settled (tried or skipped) and their total.
	Progress func(done, total int)
}

// OptimizeGroup is one group's range in the search.
type OptimizeGroup struct {
	Name        string  `json:"name"`
	GPUModel    string  `json:"gpu_model"`
	GPUsPerNode int     `json:"gpus_per_node"`
	CostPerHour float64 `json:"cost_per_hour"`
	Min         int     `json:"min"`
	Max         int     `json:"max"`
}

// Candidate is one fleet the optimizer simulated.
type Candidate struct {
	// Counts are the group counts, in OptimizeResult.Groups order.
	Counts      []int   `json:"counts"`
	GPUs        int     `json:"gpus"`
	CostPerHour float64 `json:"cost_per_hour"`
	// Verdict is meets, misses or uncertain (one run: meets or misses).
	Verdict string      `json:"verdict"`
	Classes []ClassSLOs `json:"classes"`
	// GPUUtilisation and CostPerRenderedMinute are the whole fleet's.
	GPUUtilisation        float64 `json:"gpu_utilisation"`
	CostPerRenderedMinute float64 `json:"cost_per_rendered_minute"`
	// CostPerRenderedMinuteNoData: no run rendered anything.
	CostPerRenderedMinuteNoData bool        `json:"cost_per_rendered_minute_no_data,omitempty"`
	ClassCosts                  []ClassCost `json:"class_costs"`
}

// OptimizeResult is the search and its answer.
type OptimizeResult struct {
	Farm         string          `json:"farm,omitempty"`
	Hours        float64         `json:"hours"`
	Seed         uint64          `json:"seed"`
	Replications int             `json:"replications,omitempty"`
	Currency     string          `json:"currency,omitempty"`
	Groups       []OptimizeGroup `json:"groups"`
	// Candidates is the size of the search space; Tried lists the ones
	// simulated, in cost order; Skipped counts those left out as
	// dominated by a tried one that did not meet.
	Candidates int         `json:"candidates"`
	Tried      []Candidate `json:"tried"`
	Skipped    int         `json:"skipped"`
	// Found: Best (the last of Tried) meets every class's SLOs.
	Found bool       `json:"found"`
	Best  *Candidate `json:"best,omitempty"`
	// Uncertain are tried candidates cheaper than Best whose verdict is
	// uncertain: one of them may meet too.
	Uncertain [][]int `json:"uncertain,omitempty"`
}

type optCand struct {
	counts []int
	gpus   int
	cost   float64
}

// Optimize searches the counts of fleet's groups for the cheapest fleet
// that meets every class's SLOs (see the comment at the top of the file).
func Optimize(fleet Fleet, wl Workload, cfg SimConfig, oc OptimizeConfig) (OptimizeResult, error) {
	if err := fleet.Validate(); err != nil {
		return OptimizeResult{}, err
	}
	if err := wl.Validate(); err != nil {
		return OptimizeResult{}, err
	}
	switch {
	case !hasClassSLOs(wl):
		return OptimizeResult{}, fieldErr("workload.slos", "the cost optimizer needs SLOs, the workload's or a class's")
	case cfg.Replications < 0 || cfg.Replications > maxReplications:
		return OptimizeResult{}, fieldErr("replications", "must be 1 to %d, got %d", maxReplications, cfg.Replications)
	}
	for name := range oc.Min {
		if !slices.ContainsFunc(fleet.Groups, func(g NodeGroup) bool { return g.Name == name }) {
			return OptimizeResult{}, fieldErr("optimize.min", "no node group named %q in the fleet", name)
		}
	}
	for name := range oc.Max {
		if !slices.ContainsFunc(fleet.Groups, func(g NodeGroup) bool { return g.Name == name }) {
			return OptimizeResult{}, fieldErr("optimize.max", "no node group named %q in the fleet", name)
		}
	}
	res := OptimizeResult{Farm: fleet.Name, Hours: cfg.Hours, Seed: cfg.Seed, Currency: fleet.Currency}
	nrep := max(cfg.Replications, 1)
	if nrep > 1 {
		res.Replications = nrep
	}
	space := 1
	for _, g := range fleet.Groups {
		lo, hi := oc.Min[g.Name], 2*g.Count
		if m, ok := oc.Max[g.Name]; ok {
			hi = m
		}
		if lo < 0 || hi < lo || hi > 100000 {
			return OptimizeResult{}, fieldErr("optimize."+g.Name, "need 0 <= min <= max <= 100000, got min %d max %d", lo, hi)
		}
		res.Groups = append(res.Groups, OptimizeGroup{Name: g.Name, GPUModel: g.GPUModel, GPUsPerNode: g.GPUsPerNode,
			CostPerHour: g.CostPerHour, Min: lo, Max: hi})
		space *= hi - lo + 1
		if space > maxOptimizeCandidates {
			return OptimizeResult{}, fieldErr("optimize.max", "more than %d candidate fleets; narrow the ranges", maxOptimizeCandidates)
		}
	}
	// Refuse a search in which no candidate can run the workload: the
	// fleet with every group at its largest count has every GPU kind any
	// candidate has. A candidate without a group the workload needs is
	// simulated, and misses: its videos of that model wait to the end.
	largest := make([]int, len(res.Groups))
	for i, g := range res.Groups {
		largest[i] = g.Max
	}
	if err := runnable(withCounts(fleet, largest), wl); err != nil {
		return OptimizeResult{}, fmt.Errorf("%w (every group at the largest count searched)", err)
	}
	cands := enumerate(fleet, res.Groups)
	res.Candidates = len(cands)
	par := oc.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	batch := max(1, par/nrep)
	var notMet [][]int // tried candidates that did not meet
	dominated := func(c []int) bool {
		return slices.ContainsFunc(notMet, func(m []int) bool {
			for i := range c {
				if c[i] > m[i] {
					return false
				}
			}
			return true
		})
	}
	settled := 0
	for next := 0; next < len(cands) && !res.Found; {
		// The next batch: candidates not already dominated.
		var todo []int
		for ; next < len(cands) && len(todo) < batch; next++ {
			if dominated(cands[next].counts) {
				res.Skipped++
				settled++
				continue
			}
			todo = append(todo, next)
		}
		out, err := simulateCandidates(fleet, wl, cfg, oc.Parallel, cands, todo, nrep)
		if err != nil {
			return OptimizeResult{}, err
		}
		for k, ci := range todo {
			if res.Found {
				break // a cheaper one in this batch met: the rest are moot
			}
			settled++
			if dominated(cands[ci].counts) { // by one earlier in this batch
				res.Skipped++
				continue
			}
			c := out[k]
			res.Tried = append(res.Tried, c)
			switch c.Verdict {
			case VerdictMeets:
				res.Found = true
			case VerdictUncertain:
				res.Uncertain = append(res.Uncertain, c.Counts)
				notMet = append(notMet, c.Counts)
			default:
				notMet = append(notMet, c.Counts)
			}
		}
		if res.Found {
			res.Best = &res.Tried[len(res.Tried)-1]
		}
		if oc.Progress != nil {
			oc.Progress(settled, len(cands))
		}
	}
	return res, nil
}

// enumerate lists every combination of counts with at least one GPU, by
// cost per hour, then more GPUs, then counts in group order.
func enumerate(fleet Fleet, groups []OptimizeGroup) []optCand {
	var out []optCand
	counts := make([]int, len(groups))
	var rec func(i int)
	rec = func(i int) {
		if i == len(groups) {
			c := optCand{counts: slices.Clone(counts)}
			for j, g := range groups {
				c.gpus += counts[j] * g.GPUsPerNode
				c.cost += float64(counts[j]) * g.CostPerHour
			}
			if c.gpus > 0 {
				out = append(out, c)
			}
			return
		}
		for n := groups[i].Min; n <= groups[i].Max; n++ {
			counts[i] = n
			rec(i + 1)
		}
	}
	rec(0)
	slices.SortStableFunc(out, func(a, b optCand) int {
		if c := cmp.Compare(a.cost, b.cost); c != 0 {
			return c
		}
		if c := cmp.Compare(b.gpus, a.gpus); c != 0 {
			return c
		}
		return slices.Compare(a.counts, b.counts)
	})
	return out
}

// withCounts is fleet with the given group counts; groups at 0 are left out.
func withCounts(fleet Fleet, counts []int) Fleet {
	f := fleet
	f.Groups = nil
	for i, g := range fleet.Groups {
		if counts[i] > 0 {
			g.Count = counts[i]
			f.Groups = append(f.Groups, g)
		}
	}
	return f
}

// simulateCandidates runs nrep replications of each cands[todo[k]], all on
// the pool at once, and judges each.
func simulateCandidates(fleet Fleet, wl Workload, cfg SimConfig, par int, cands []optCand, todo []int, nrep int) ([]Candidate, error) {
	reps, errs := make([]SimReport, len(todo)*nrep), make([]error, len(todo)*nrep)
	perRun, err := checkVideos(wl, cfg.Hours)
	if err != nil {
		return nil, err
	}
	forEach(len(reps), runsAtOnce(perRun, par), func(j int) {
		k, r := j/nrep, j%nrep
		c := cands[todo[k]]
		reps[j], errs[j] = simulateOnce(withCounts(fleet, c.counts), wl, replicaConfig(cfg, r))
		if errs[j] != nil {
			errs[j] = fmt.Errorf("bench: optimize %v seed %d: %w", c.counts, cfg.Seed+uint64(r), errs[j])
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	out := make([]Candidate, len(todo))
	for k, ci := range todo {
		rep := reps[k*nrep]
		if nrep > 1 {
			rep = combine(reps[k*nrep : (k+1)*nrep])
		}
		c := cands[ci]
		cl, v := classChecks(rep)
		out[k] = Candidate{Counts: c.counts, GPUs: c.gpus, CostPerHour: c.cost, Verdict: v, Classes: cl,
			GPUUtilisation: rep.GPUUtilisation, CostPerRenderedMinute: rep.CostPerRenderedMinute,
			CostPerRenderedMinuteNoData: rep.CostPerRenderedMinuteNoData, ClassCosts: rep.CostByClass()}
	}
	return out, nil
}
