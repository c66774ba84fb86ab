package bench

import (
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
)

// SimReport is what a simulation measured. Times are in seconds; cost is
// in the unit of the fleet's cost_per_hour.
type SimReport struct {
	Farm  string  `json:"farm,omitempty"` // the fleet's name
	Hours float64 `json:"hours"`
	Seed  uint64  `json:"seed"`
	// Replications is how many runs (seeds Seed, Seed+1, …) the figures
	// are the mean of; absent for one run.
	Replications int `json:"replications,omitempty"`
	Nodes        int `json:"nodes"`
	GPUs         int `json:"gpus"`
	CPUSlots     int `json:"cpu_slots"`
	// Submitted, Completed and the other counts of a report are whole
	// numbers in one run and, with replications, the mean over the runs,
	// unrounded: a class with 0.4 videos a run has 0.4, not 0 beside
	// waits measured on its videos, and the JSON's field agrees with its
	// `ci` entry.
	Submitted float64 `json:"submitted"`
	Completed float64 `json:"completed"`
	// InFlight are videos submitted but not finished when the run ended.
	InFlight float64 `json:"in_flight"`
	// Overall covers every video; Modes has one entry per video mode
	// ("manual", "auto"); Accounts one per account class, in workload order.
	Overall  GroupStats   `json:"overall"`
	Modes    []GroupStats `json:"modes"`
	Accounts []GroupStats `json:"accounts"`
	// GPUUtilisation and CPUUtilisation are the busy fraction of all GPUs
	// and all CPU slots over the run.
	GPUUtilisation    float64 `json:"gpu_utilisation"`
	CPUUtilisation    float64 `json:"cpu_utilisation"`
	ThroughputPerHour float64 `json:"throughput_per_hour"` // completed videos per hour
	VideosPerGPUHour  float64 `json:"videos_per_gpu_hour"`
	// RenderedMinutes is the output length of the completed videos.
	RenderedMinutes float64 `json:"rendered_minutes"`
	Cost            float64 `json:"cost"`
	// CostPerRenderedMinute is Cost over RenderedMinutes; with
	// replications the mean of the runs' ratios, not Cost over the mean
	// minutes (sim_figures.go says why).
	CostPerRenderedMinute float64 `json:"cost_per_rendered_minute"`
	// CostPerRenderedMinuteNoData: nothing was rendered (in any run), so
	// there is no cost per rendered minute; CostPerRenderedMinute is 0.
	CostPerRenderedMinuteNoData bool `json:"cost_per_rendered_minute_no_data,omitempty"`
	// Currency is the fleet's: the unit of every cost (absent: none named).
	Currency string `json:"currency,omitempty"`
	// ClassCosts, when the fleet names a currency, apportion Cost to the
	// account classes (ClassCosts).
	ClassCosts []ClassCost `json:"class_costs,omitempty"`
	// Timeline is the run cut into equal intervals (sim_timeline.go).
	Timeline []TimelinePoint `json:"timeline"`
	// Faults is what node failures, agent restarts and cold starts cost;
	// absent when the fleet sets none of them (sim_faults.go).
	Faults *FaultStats `json:"faults,omitempty"`
	// CI has, with replications, every figure of the CSV that varies
	// between runs: its mean and 95% confidence interval (sim_repl.go).
	CI []Estimate `json:"ci,omitempty"`
	// hiddenCI are the intervals of the figures the CSV leaves out (the
	// sample sizes): the table writes those means at their precision.
	hiddenCI []Estimate
	// Overload is set when the farm did not keep up: more than
	// overloadShare of the videos submitted had not started by the end.
	// Their waits are not in any percentile (a wait is measured when it
	// ends), so the percentiles, over started videos only, understate
	// the wait, by far when the queue grows all run long.
	Overload *Overload `json:"overload,omitempty"`
	// notStarted is, whether or not it makes an Overload, the videos
	// submitted that had not started at the end (with replications, the
	// mean).
	notStarted float64
}

// Overload is how far a farm fell behind (SimReport.Overload).
type Overload struct {
	// NotStarted are the videos submitted but never started (no task
	// leased) by the end of the run; with replications, the mean.
	NotStarted float64 `json:"not_started"`
	// Share is NotStarted over the videos submitted.
	Share float64 `json:"share"`
}

// overloadShare is the share of videos not started at the end above
// which a report warns: a farm that keeps up has only the last minutes'
// arrivals waiting, well under 1%.
const overloadShare = 0.01

// setOverload fills Overload from notStarted and Submitted.
func (r *SimReport) setOverload() {
	r.Overload = nil
	if r.Submitted > 0 && r.notStarted/r.Submitted > overloadShare {
		r.Overload = &Overload{NotStarted: r.notStarted, Share: r.notStarted / r.Submitted}
	}
}

// GroupStats are the statistics of one mode or one account class. Only
// videos submitted after the warm-up count.
type GroupStats struct {
	Name string `json:"name"`
	// Submitted and Completed: with replications, means (SimReport.Submitted).
	Submitted float64 `json:"submitted"`
	Completed float64 `json:"completed"`
	// Wait is from submission to the video's first lease (for auto videos
	// that is the CPU plan task).
	Wait Percentiles `json:"wait"`
	// GPUWait is from a GPU task becoming ready (submission for a manual
	// render, the end of plan for auto scenes) to its lease.
	GPUWait Percentiles `json:"gpu_wait"`
	// Turnaround is from submission to completion.
	Turnaround Percentiles `json:"turnaround"`
	SLOs       []SLOResult `json:"slos,omitempty"`
	// For account classes, what their cost is apportioned by: the
	// GPU-seconds their tasks were busy before the horizon, and the videos
	// completed and minutes rendered in the whole run (warm-up included,
	// as the cost covers it).
	gpuSeconds      float64
	completedAll    float64
	renderedMinutes float64
}

// Percentiles summarises a sample of durations, in seconds.
type Percentiles struct {
	Count float64 `json:"count"` // with replications, the mean over all runs
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	// NoData: nothing was measured (a group without videos, a class none
	// of whose videos finished), so the figures above, all 0, say
	// nothing. With replications: no run measured anything; the figures
	// are then the means over the runs that did, and Count the mean over
	// all runs (below 1 when some runs measured nothing).
	NoData bool `json:"no_data,omitempty"`
}

type groupRec struct {
	name                 string
	slos                 []SLO
	pending              []int // per SLO: misses still pending at the end
	submitted, completed int
	// wait, gpuWait and turnaround share the chunks of the group's cells
	// (recorder.cells), from the report on.
	wait, gpuWait, turnaround samples
	// For classes: busy GPU-milliseconds, completed videos and rendered
	// seconds over the whole run.
	gpuMS, completedAll, renderedS int64
}

// stats summarises the group; its samples' chunks must be sorted
// (sortSamples).
func (g *groupRec) stats() GroupStats {
	st := GroupStats{
		Name: g.name, Submitted: float64(g.submitted), Completed: float64(g.completed),
		Wait: g.wait.summary(), GPUWait: g.gpuWait.summary(), Turnaround: g.turnaround.summary(),
	}
	for i, o := range g.slos {
		sorted := &g.turnaround
		switch o.Metric {
		case MetricWait:
			sorted = &g.wait
		case MetricGPUWait:
			sorted = &g.gpuWait
		}
		st.SLOs = append(st.SLOs, attainment(o, sorted, g.pending[i]))
	}
	st.gpuSeconds = float64(g.gpuMS) / 1000
	st.completedAll = float64(g.completedAll)
	st.renderedMinutes = float64(g.renderedS) / 60
	return st
}

// addPending counts v's pending misses at end against the group's SLOs.
func (g *groupRec) addPending(v *simVideo, end time.Duration) {
	for i, o := range g.slos {
		g.pending[i] += v.pendingMisses(o, end)
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
	tl                   timeline
	// cells are the samples of the videos of one mode (0 manual, 1 auto)
	// and one account class: each is recorded once, where the groups it
	// counts in would each have kept a copy.
	cells [2][]cellRec
}

type cellRec struct{ wait, gpuWait, turnaround samples }

func newGroupRec(name string, slos []SLO) groupRec {
	return groupRec{name: name, slos: slos, pending: make([]int, len(slos))}
}

func newRecorder(wl Workload, horizon time.Duration) *recorder {
	r := &recorder{
		manual: newGroupRec(string(scheduler.ModeManual), wl.SLOs),
		auto:   newGroupRec(string(scheduler.ModeAuto), wl.SLOs),
		tl:     newTimeline(horizon),
	}
	for _, c := range wl.Accounts {
		slos := wl.SLOs
		if len(c.SLOs) > 0 {
			slos = c.SLOs
		}
		r.classes = append(r.classes, newGroupRec(c.Name, slos))
	}
	for m := range r.cells {
		r.cells[m] = make([]cellRec, len(wl.Accounts))
	}
	return r
}

func (r *recorder) mode(v *simVideo) *groupRec {
	if v.mode == scheduler.ModeManual {
		return &r.manual
	}
	return &r.auto
}

func (r *recorder) cell(v *simVideo) *cellRec {
	m := 1
	if v.mode == scheduler.ModeManual {
		m = 0
	}
	return &r.cells[m][v.class]
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
	r.cell(v).wait.add(wait)
}

func (r *recorder) gpuLease(v *simVideo, now, wait time.Duration) {
	r.tl.gpuWait(now, wait)
	if !v.counted {
		return
	}
	r.cell(v).gpuWait.add(wait)
}

func (r *recorder) completed(v *simVideo, now, turnaround time.Duration) {
	r.completedAll++
	r.renderedSeconds += int64(v.seconds)
	r.tl.completed(now)
	r.classes[v.class].completedAll++
	r.classes[v.class].renderedS += int64(v.seconds)
	if !v.counted {
		return
	}
	r.mode(v).completed++
	r.classes[v.class].completed++
	r.cell(v).turnaround.add(turnaround)
}

// queued notes the ready GPU tasks after an event at now.
func (r *recorder) queued(now time.Duration, gpuTasks int) { r.tl.queued(now, gpuTasks) }

// busy adds the part of t's run before the horizon to the busy totals.
func (r *recorder) busy(t *simTask, horizon time.Duration) {
	end := min(t.end, horizon)
	if end <= t.started {
		return
	}
	ms := (end - t.started).Milliseconds()
	r.gpuBusyMS += ms * int64(t.gpus)
	r.classes[t.class].gpuMS += ms * int64(t.gpus)
	r.cpuBusyMS += ms * int64(t.cpu)
	r.tl.busy(t.started, end, t.gpus, t.cpu)
}

func (s *sim) report() SimReport {
	// Tasks still running at the horizon were busy until it.
	for _, t := range s.running {
		s.rec.busy(t, s.horizon)
	}
	r := s.rec
	overall := newGroupRec("all", s.wl.SLOs)
	notStarted := 0
	for _, v := range s.videos.all() {
		if !v.leased {
			notStarted++
		}
		if !v.counted {
			continue
		}
		r.mode(v).addPending(v, s.horizon)
		r.classes[v.class].addPending(v, s.horizon)
		overall.addPending(v, s.horizon)
	}
	var cells []*samples
	for m, mg := range []*groupRec{&r.manual, &r.auto} {
		overall.submitted += mg.submitted
		overall.completed += mg.completed
		for c := range r.cells[m] {
			cell := &r.cells[m][c]
			cells = append(cells, &cell.wait, &cell.gpuWait, &cell.turnaround)
			for _, g := range []*groupRec{mg, &r.classes[c], &overall} {
				g.wait.addAll(&cell.wait)
				g.gpuWait.addAll(&cell.gpuWait)
				g.turnaround.addAll(&cell.turnaround)
			}
		}
	}
	sortSamples(cells)
	rep := SimReport{
		Farm: s.fleet.Name, Hours: s.cfg.Hours, Seed: s.cfg.Seed, Nodes: len(s.nodes),
		Submitted: float64(r.submittedAll), Completed: float64(r.completedAll), InFlight: float64(r.submittedAll - r.completedAll),
		Overall:         overall.stats(),
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
	} else {
		rep.CostPerRenderedMinuteNoData = true
	}
	rep.Timeline = r.tl.points(rep.GPUs, rep.CPUSlots)
	rep.Faults = s.faultStats()
	rep.setClassCosts(s.fleet.Currency)
	rep.notStarted = float64(notStarted)
	rep.setOverload()
	return rep
}

// ClassCost is an account class's share of the fleet's cost. The rule:
// the cost of the whole fleet over the run (idle GPUs and CPU-only nodes
// included) is split between the classes in proportion to the GPU-seconds
// their tasks kept GPUs busy; a class's cost per video is its share over
// the videos of the class completed in the run, per rendered minute over
// their output minutes. With replications each input is the mean over the
// runs.
type ClassCost struct {
	Name       string  `json:"name"`
	GPUSeconds float64 `json:"gpu_seconds"`
	// Share of the fleet's GPU-seconds, 0..1, and so of its cost.
	Share           float64 `json:"share"`
	Cost            float64 `json:"cost"`
	Videos          float64 `json:"videos"` // completed in the run
	RenderedMinutes float64 `json:"rendered_minutes"`
	// CostPerVideo and CostPerRenderedMinute are 0 when the class
	// completed no video (Videos 0): no number, so the CSV leaves them
	// empty and the table writes a dash.
	CostPerVideo          float64 `json:"cost_per_video"`
	CostPerRenderedMinute float64 `json:"cost_per_rendered_minute"`
}

// CostByClass apportions r.Cost to the account classes (ClassCost).
func (r SimReport) CostByClass() []ClassCost {
	var total float64
	for _, g := range r.Accounts {
		total += g.gpuSeconds
	}
	out := make([]ClassCost, len(r.Accounts))
	for i, g := range r.Accounts {
		c := ClassCost{Name: g.Name, GPUSeconds: g.gpuSeconds, Videos: g.completedAll, RenderedMinutes: g.renderedMinutes}
		if total > 0 {
			c.Share = g.gpuSeconds / total
		}
		c.Cost = c.Share * r.Cost
		if c.Videos > 0 {
			c.CostPerVideo = c.Cost / c.Videos
		}
		if c.RenderedMinutes > 0 {
			c.CostPerRenderedMinute = c.Cost / c.RenderedMinutes
		}
		out[i] = c
	}
	return out
}

// setClassCosts fills Currency and, when there is one, ClassCosts (a
// report without a currency stays as it was before they existed).
func (r *SimReport) setClassCosts(currency string) {
	r.Currency = currency
	r.ClassCosts = nil
	if currency != "" {
		r.ClassCosts = r.CostByClass()
	}
}
