package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
)

// SimReport is what a simulation measured. Times are in seconds; cost is
// in the unit of the fleet's cost_per_hour.
type SimReport struct {
	Hours     float64 `json:"hours"`
	Seed      uint64  `json:"seed"`
	Nodes     int     `json:"nodes"`
	GPUs      int     `json:"gpus"`
	CPUSlots  int     `json:"cpu_slots"`
	Submitted int     `json:"submitted"`
	Completed int     `json:"completed"`
	// InFlight are videos submitted but not finished when the run ended.
	InFlight int `json:"in_flight"`
	// Modes has one entry per video mode ("manual", "auto"); Accounts one
	// per account class, in workload order.
	Modes    []GroupStats `json:"modes"`
	Accounts []GroupStats `json:"accounts"`
	// GPUUtilisation and CPUUtilisation are the busy fraction of all GPUs
	// and all CPU slots over the run.
	GPUUtilisation    float64 `json:"gpu_utilisation"`
	CPUUtilisation    float64 `json:"cpu_utilisation"`
	ThroughputPerHour float64 `json:"throughput_per_hour"` // completed videos per hour
	VideosPerGPUHour  float64 `json:"videos_per_gpu_hour"`
	// RenderedMinutes is the output length of the completed videos.
	RenderedMinutes       float64 `json:"rendered_minutes"`
	Cost                  float64 `json:"cost"`
	CostPerRenderedMinute float64 `json:"cost_per_rendered_minute"`
}

// GroupStats are the statistics of one mode or one account class. Only
// videos submitted after the warm-up count.
type GroupStats struct {
	Name      string `json:"name"`
	Submitted int    `json:"submitted"`
	Completed int    `json:"completed"`
	// Wait is from submission to the video's first lease (for auto videos
	// that is the CPU plan task).
	Wait Percentiles `json:"wait"`
	// GPUWait is from a GPU task becoming ready (submission for a manual
	// render, the end of plan for auto scenes) to its lease.
	GPUWait Percentiles `json:"gpu_wait"`
	// Turnaround is from submission to completion.
	Turnaround Percentiles `json:"turnaround"`
}

// Percentiles summarises a sample of durations, in seconds.
type Percentiles struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// sample collects durations.
type sample []time.Duration

func (s sample) summary() Percentiles {
	if len(s) == 0 {
		return Percentiles{}
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	return Percentiles{
		Count: len(sorted),
		Mean:  sum.Seconds() / float64(len(sorted)),
		P50:   percentile(sorted, 0.50).Seconds(),
		P95:   percentile(sorted, 0.95).Seconds(),
		P99:   percentile(sorted, 0.99).Seconds(),
		Max:   sorted[len(sorted)-1].Seconds(),
	}
}

type groupRec struct {
	name                      string
	submitted, completed      int
	wait, gpuWait, turnaround sample
}

func (g *groupRec) stats() GroupStats {
	return GroupStats{
		Name: g.name, Submitted: g.submitted, Completed: g.completed,
		Wait: g.wait.summary(), GPUWait: g.gpuWait.summary(), Turnaround: g.turnaround.summary(),
	}
}

// recorder accumulates a run's measurements.
type recorder struct {
	manual, auto         groupRec
	classes              []groupRec
	submittedAll         int
	completedAll         int
	renderedSeconds      int64
	gpuBusyMS, cpuBusyMS int64 // GPU-milliseconds and slot-milliseconds
}

func newRecorder(wl Workload) *recorder {
	r := &recorder{manual: groupRec{name: string(scheduler.ModeManual)}, auto: groupRec{name: string(scheduler.ModeAuto)}}
	for _, c := range wl.Accounts {
		r.classes = append(r.classes, groupRec{name: c.Name})
	}
	return r
}

func (r *recorder) mode(v *simVideo) *groupRec {
	if v.mode == scheduler.ModeManual {
		return &r.manual
	}
	return &r.auto
}

func (r *recorder) submitted(v *simVideo) {
	r.submittedAll++
	if !v.counted {
		return
	}
	r.mode(v).submitted++
	r.classes[v.class].submitted++
}

func (r *recorder) firstLease(v *simVideo, wait time.Duration) {
	if !v.counted {
		return
	}
	r.mode(v).wait = append(r.mode(v).wait, wait)
	r.classes[v.class].wait = append(r.classes[v.class].wait, wait)
}

func (r *recorder) gpuLease(v *simVideo, wait time.Duration) {
	if !v.counted {
		return
	}
	r.mode(v).gpuWait = append(r.mode(v).gpuWait, wait)
	r.classes[v.class].gpuWait = append(r.classes[v.class].gpuWait, wait)
}

func (r *recorder) completed(v *simVideo, turnaround time.Duration) {
	r.completedAll++
	r.renderedSeconds += int64(v.seconds)
	if !v.counted {
		return
	}
	m := r.mode(v)
	m.completed++
	m.turnaround = append(m.turnaround, turnaround)
	c := &r.classes[v.class]
	c.completed++
	c.turnaround = append(c.turnaround, turnaround)
}

// busy adds the part of t's run before the horizon to the busy totals.
func (r *recorder) busy(t *simTask, horizon time.Duration) {
	end := min(t.end, horizon)
	if end <= t.started {
		return
	}
	ms := (end - t.started).Milliseconds()
	r.gpuBusyMS += ms * int64(t.gpus)
	r.cpuBusyMS += ms * int64(t.cpu)
}

func (s *sim) report() SimReport {
	// Tasks still running at the horizon were busy until it.
	for _, t := range s.running {
		s.rec.busy(t, s.horizon)
	}
	r := s.rec
	rep := SimReport{
		Hours: s.cfg.Hours, Seed: s.cfg.Seed, Nodes: len(s.nodes),
		Submitted: r.submittedAll, Completed: r.completedAll, InFlight: r.submittedAll - r.completedAll,
		Modes:           []GroupStats{r.manual.stats(), r.auto.stats()},
		RenderedMinutes: float64(r.renderedSeconds) / 60,
	}
	for i := range r.classes {
		rep.Accounts = append(rep.Accounts, r.classes[i].stats())
	}
	for _, g := range s.fleet.Groups {
		rep.GPUs += g.Count * g.GPUsPerNode
		rep.CPUSlots += g.Count * g.CPUSlots
		rep.Cost += float64(g.Count) * g.CostPerHour * s.cfg.Hours
	}
	runMS := float64(s.horizon.Milliseconds())
	if rep.GPUs > 0 {
		rep.GPUUtilisation = float64(r.gpuBusyMS) / (runMS * float64(rep.GPUs))
		rep.VideosPerGPUHour = float64(r.completedAll) / (float64(rep.GPUs) * s.cfg.Hours)
	}
	if rep.CPUSlots > 0 {
		rep.CPUUtilisation = float64(r.cpuBusyMS) / (runMS * float64(rep.CPUSlots))
	}
	rep.ThroughputPerHour = float64(r.completedAll) / s.cfg.Hours
	if rep.RenderedMinutes > 0 {
		rep.CostPerRenderedMinute = rep.Cost / rep.RenderedMinutes
	}
	return rep
}

// String renders the report as a plain-text table.
func (r SimReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %.1f h (seed %d): %d nodes, %d GPUs, %d CPU slots\n", r.Hours, r.Seed, r.Nodes, r.GPUs, r.CPUSlots)
	fmt.Fprintf(&b, "videos: %d submitted, %d completed, %d in flight at the end\n", r.Submitted, r.Completed, r.InFlight)
	fmt.Fprintf(&b, "throughput %.1f videos/h, %.2f videos per GPU-hour, GPU utilisation %.1f%%, CPU utilisation %.1f%%\n",
		r.ThroughputPerHour, r.VideosPerGPUHour, 100*r.GPUUtilisation, 100*r.CPUUtilisation)
	fmt.Fprintf(&b, "rendered %.1f min for a cost of %.2f: %.3f per rendered minute\n\n", r.RenderedMinutes, r.Cost, r.CostPerRenderedMinute)
	fmt.Fprintf(&b, "%-18s %9s %9s  %-34s  %-34s  %s\n", "group", "submitted", "completed",
		"wait s (p50 / p95 / p99)", "GPU wait s (p50 / p95 / p99)", "turnaround s (p50 / p95)")
	row := func(kind string, g GroupStats) {
		fmt.Fprintf(&b, "%-18s %9d %9d  %-34s  %-34s  %s\n", kind+" "+g.Name, g.Submitted, g.Completed,
			p3(g.Wait), p3(g.GPUWait), fmt.Sprintf("%.1f / %.1f", g.Turnaround.P50, g.Turnaround.P95))
	}
	for _, g := range r.Modes {
		row("mode", g)
	}
	for _, g := range r.Accounts {
		row("class", g)
	}
	return b.String()
}

func p3(p Percentiles) string {
	return fmt.Sprintf("%.1f / %.1f / %.1f", p.P50, p.P95, p.P99)
}
