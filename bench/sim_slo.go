package bench

import (
	"fmt"
	"time"
)

// SLO is a service-level objective: at least Target of the videos (or, for
// gpu_wait, of the GPU tasks) see Metric within Seconds.
type SLO struct {
	// Metric is "wait" (submission to first lease), "gpu_wait" (a GPU task
	// ready to leased) or "turnaround" (submission to completed).
	Metric  string  `json:"metric"`
	Seconds float64 `json:"seconds"`
	// Target is the fraction that must meet it, in (0, 1]; 0 means 0.95.
	Target float64 `json:"target,omitempty"`
}

// SLO metrics.
const (
	MetricWait       = "wait"
	MetricGPUWait    = "gpu_wait"
	MetricTurnaround = "turnaround"
)

// defaultSLOTarget is the attainment an SLO asks for when it names none.
const defaultSLOTarget = 0.95

func (o SLO) target() float64 {
	if o.Target == 0 {
		return defaultSLOTarget
	}
	return o.Target
}

func validateSLOs(p string, slos []SLO) error {
	for i, o := range slos {
		q := fmt.Sprintf("%s[%d]", p, i)
		switch {
		case o.Metric != MetricWait && o.Metric != MetricGPUWait && o.Metric != MetricTurnaround:
			return fieldErr(q+".metric", `must be "wait", "gpu_wait" or "turnaround", got %q`, o.Metric)
		case !finite(o.Seconds) || o.Seconds < 0:
			return fieldErr(q+".seconds", "must be a number >= 0, got %v", o.Seconds)
		case !finite(o.Target) || o.Target < 0 || o.Target > 1:
			return fieldErr(q+".target", "must be in (0, 1] (0 means %v), got %v", defaultSLOTarget, o.Target)
		}
	}
	return nil
}

// SLOResult is how well a group of videos met one SLO.
type SLOResult struct {
	SLO
	// Count is how many videos (GPU tasks for gpu_wait) were measured,
	// including those still pending at the end of the run that had already
	// waited longer than Seconds: they count as misses. With replications,
	// the mean over all runs.
	Count float64 `json:"count"`
	// Attained is the fraction of Count within Seconds; 0 when Count is 0
	// (NoData).
	Attained float64 `json:"attained"`
	// Met: Attained >= Target, on at least one measure. With replications,
	// only when that is certain (Verdict "met"): a mean at or above the
	// target whose interval reaches below it, or that one run alone
	// measured, is "uncertain" in the table, and a JSON or CSV reader
	// taking met for true would buy a fleet on it.
	Met bool `json:"met"`
	// NoData: nothing was measured (the group's videos never reach the
	// metric in the run: a class of videos the workload does not make, a
	// run too short for any to finish), so whether the SLO is met is
	// unknown. With replications, no run measured anything.
	NoData bool `json:"no_data,omitempty"`
	// Verdict, with replications only, is the table's verdict: SLOMet,
	// SLOMissed, SLOUncertain or SLONoData. One run needs none: Met and
	// NoData say all of it, and its output stays as it was.
	Verdict string `json:"verdict,omitempty"`
}

// SLO verdicts of a replicated report (SLOResult.Verdict), from the
// interval of the attainment: met when it lies wholly at or above the
// target, missed when wholly below, uncertain across it or when one run
// alone measured it (one run has no interval), no data when none did.
const (
	SLOMet       = "met"
	SLOMissed    = "missed"
	SLOUncertain = "uncertain"
	SLONoData    = "no data"
)

// attainment measures sorted (the group's samples for o.Metric, their
// chunks sorted) against o, with pending more misses. With nothing to
// measure the SLO is not met: "100% of nothing" would pass a class the
// run never tested, and a sweep would buy a fleet on it.
func attainment(o SLO, sorted *samples, pending int) SLOResult {
	within := sorted.atMost(secondsDur(o.Seconds))
	r := SLOResult{SLO: o, Count: float64(sorted.len() + pending)}
	if o.Target == 0 {
		r.Target = defaultSLOTarget
	}
	if r.Count == 0 {
		r.NoData = true
		return r
	}
	r.Attained = float64(within) / r.Count
	r.Met = r.Attained >= o.target()
	return r
}

// pendingMisses is how many of v's measures for o are still pending at end
// and already past o.Seconds.
func (v *simVideo) pendingMisses(o SLO, end time.Duration) int {
	lim := secondsDur(o.Seconds)
	switch o.Metric {
	case MetricWait:
		if !v.leased && end-v.submitted > lim {
			return 1
		}
	case MetricTurnaround:
		if end-v.submitted > lim {
			return 1
		}
	case MetricGPUWait:
		if !v.scenesReady {
			if v.scenes == 0 && v.gpuLeased == 0 && end-v.submitted > lim {
				return 1 // a manual render
			}
		} else if end-v.scenesAt > lim {
			return v.scenes - v.gpuLeased
		}
	}
	return 0
}
