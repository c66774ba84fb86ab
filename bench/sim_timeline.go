package bench

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// TimelinePoint is one interval of the simulated run.
type TimelinePoint struct {
	StartHours float64 `json:"start_hours"`
	Hours      float64 `json:"hours"` // the interval's length
	// GPUWait percentiles (seconds) of the GPU tasks leased in the
	// interval (2 significant digits); zero, and GPUWaitNoData set, when
	// none was (with replications: in no run; the percentiles are then
	// the means over the runs that leased one).
	GPUWaitP50    float64 `json:"gpu_wait_p50"`
	GPUWaitP95    float64 `json:"gpu_wait_p95"`
	GPUWaitP99    float64 `json:"gpu_wait_p99"`
	GPUWaitNoData bool    `json:"gpu_wait_no_data,omitempty"`
	// GPUUtilisation and CPUUtilisation are the busy fractions in the
	// interval.
	GPUUtilisation float64 `json:"gpu_utilisation"`
	CPUUtilisation float64 `json:"cpu_utilisation"`
	Completed      float64 `json:"completed"`
	// QueuedGPUTasks are the ready GPU tasks at the interval's last event.
	QueuedGPUTasks float64 `json:"queued_gpu_tasks"`
}

// timelineWidths are the interval lengths a timeline may use: the smallest
// that cuts the run into at most maxTimelinePoints.
var timelineWidths = []time.Duration{
	time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

const maxTimelinePoints = 200

// timeline accumulates per-interval figures. Waits go in an HDR histogram
// per interval (2 significant digits: a few KB each, where keeping every
// sample of a week-long run would cost tens of MB).
type timeline struct {
	width   time.Duration
	horizon time.Duration
	buckets []tlBucket
}

type tlBucket struct {
	wait                 *hdrhistogram.Histogram // milliseconds
	gpuBusyMS, cpuBusyMS int64
	completed            int
	queued               int
}

func newTimeline(horizon time.Duration) timeline {
	w := timelineWidths[len(timelineWidths)-1]
	for _, c := range timelineWidths {
		if horizon <= c*maxTimelinePoints {
			w = c
			break
		}
	}
	n := int((horizon + w - 1) / w)
	return timeline{width: w, horizon: horizon, buckets: make([]tlBucket, max(n, 1))}
}

func (tl *timeline) at(t time.Duration) *tlBucket {
	return &tl.buckets[min(int(t/tl.width), len(tl.buckets)-1)]
}

func (tl *timeline) gpuWait(now, wait time.Duration) {
	b := tl.at(now)
	if b.wait == nil {
		b.wait = hdrhistogram.New(1, max(tl.horizon.Milliseconds(), 2), 2)
	}
	// Below 1 ms counts as 1 ms; the histogram's range is the whole run.
	_ = b.wait.RecordValue(max(wait.Milliseconds(), 1))
}

func (tl *timeline) completed(now time.Duration) { tl.at(now).completed++ }

func (tl *timeline) queued(now time.Duration, n int) { tl.at(now).queued = n }

// busy spreads a task's run from start to end over the intervals it spans.
func (tl *timeline) busy(start, end time.Duration, gpus, cpu int) {
	for t := start; t < end; {
		i := int(t / tl.width)
		next := min(time.Duration(i+1)*tl.width, end)
		b := tl.at(t)
		ms := (next - t).Milliseconds()
		b.gpuBusyMS += ms * int64(gpus)
		b.cpuBusyMS += ms * int64(cpu)
		t = next
	}
}

func (tl *timeline) points(gpus, cpuSlots int) []TimelinePoint {
	out := make([]TimelinePoint, len(tl.buckets))
	for i, b := range tl.buckets {
		start := time.Duration(i) * tl.width
		length := min(tl.width, tl.horizon-start)
		p := TimelinePoint{StartHours: start.Hours(), Hours: length.Hours(), Completed: float64(b.completed), QueuedGPUTasks: float64(b.queued)}
		p.GPUWaitNoData = b.wait == nil
		if b.wait != nil {
			p.GPUWaitP50 = float64(b.wait.ValueAtQuantile(50)) / 1000
			p.GPUWaitP95 = float64(b.wait.ValueAtQuantile(95)) / 1000
			p.GPUWaitP99 = float64(b.wait.ValueAtQuantile(99)) / 1000
		}
		if ms := float64(length.Milliseconds()); ms > 0 {
			if gpus > 0 {
				p.GPUUtilisation = float64(b.gpuBusyMS) / (ms * float64(gpus))
			}
			if cpuSlots > 0 {
				p.CPUUtilisation = float64(b.cpuBusyMS) / (ms * float64(cpuSlots))
			}
		}
		out[i] = p
	}
	return out
}
