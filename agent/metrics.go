package agent

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Task outcomes in the metrics.
const (
	outcomeCompleted = "completed" // reported complete and accepted
	outcomeFailed    = "failed"    // reported failed
	outcomeDropped   = "dropped"   // stale lease, lost credential, shutdown: nothing reported
)

// metrics are what the agent counts for Prometheus (Config.Metrics). The
// zero value counts nothing, so an agent without a registry pays nothing.
type metrics struct {
	running  *prometheus.GaugeVec
	tasks    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	leaseErr prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, a *agent) *metrics {
	m := &metrics{}
	if reg == nil {
		return m
	}
	m.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vidfarm_agent_tasks_running",
		Help: "Tasks this agent is running, by kind."}, []string{"kind"})
	m.tasks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vidfarm_agent_tasks_total",
		Help: "Tasks this agent ended, by kind and outcome (completed, failed, dropped)."}, []string{"kind", "outcome"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vidfarm_agent_task_duration_seconds",
		Help:    "Wall time of the tasks this agent ended, from lease to report, by kind and outcome.",
		Buckets: []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 3600}}, []string{"kind", "outcome"})
	m.leaseErr = prometheus.NewCounter(prometheus.CounterOpts{Name: "vidfarm_agent_lease_errors_total",
		Help: "Lease requests to the control plane that failed (and were retried)."})
	reg.MustRegister(m.running, m.tasks, m.duration, m.leaseErr, &stateCollector{a: a})
	// Every kind the node takes, and every outcome of it, is there from the
	// start, at 0: a series that first appears at 1 hides that rise from
	// rate() and increase(), an alert over a series that is absent never
	// fires, and a dashboard shows nothing until a task ends.
	for _, k := range offeredKinds(a.capacity) {
		m.running.WithLabelValues(string(k))
		for _, o := range []string{outcomeCompleted, outcomeFailed, outcomeDropped} {
			m.tasks.WithLabelValues(string(k), o)
			m.duration.WithLabelValues(string(k), o)
		}
	}
	return m
}

// offeredKinds are the task kinds a node of capacity c can be given: the
// GPU kinds where it has GPUs (virtual ones too), the CPU kinds where it
// has CPU slots.
func offeredKinds(c wire.Capacity) []scheduler.Kind {
	var out []scheduler.Kind
	if len(c.GPUs) > 0 {
		out = append(out, scheduler.KindRender, scheduler.KindScene)
	}
	if c.CPUSlots > 0 {
		out = append(out, scheduler.KindPlan, scheduler.KindTTS, scheduler.KindComposite, scheduler.KindFinalize,
			scheduler.KindAvatar, scheduler.KindSpeech)
	}
	return out
}

func (m *metrics) started(kind string) {
	if m.running != nil {
		m.running.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) ended(kind, outcome string, elapsed time.Duration) {
	if m.running == nil {
		return
	}
	m.running.WithLabelValues(kind).Dec()
	m.tasks.WithLabelValues(kind, outcome).Inc()
	m.duration.WithLabelValues(kind, outcome).Observe(elapsed.Seconds())
}

func (m *metrics) leaseFailed() {
	if m.leaseErr != nil {
		m.leaseErr.Inc()
	}
}

// stateCollector reads at scrape time what the agent does not count as it
// goes: registration, the work directory and the GPUs (through
// Config.SampleGPUs, so NVML is read only when someone looks).
type stateCollector struct{ a *agent }

var (
	descRegistered = prometheus.NewDesc("vidfarm_agent_registered",
		"1 while the agent holds a node credential from the control plane.", nil, nil)
	descWorkDir = prometheus.NewDesc("vidfarm_agent_work_dir_bytes",
		"Bytes of the files in the agent's work directory.", nil, nil)
	gpuLabels      = []string{"index", "uuid", "name"}
	descGPUTotal   = prometheus.NewDesc("vidfarm_agent_gpu_memory_total_bytes", "Memory of each GPU (NVML).", gpuLabels, nil)
	descGPUUsed    = prometheus.NewDesc("vidfarm_agent_gpu_memory_used_bytes", "Memory in use on each GPU (NVML).", gpuLabels, nil)
	descGPUUtil    = prometheus.NewDesc("vidfarm_agent_gpu_utilization_ratio", "GPU utilisation over NVML's last sample period, 0 to 1.", gpuLabels, nil)
	descGPUTemp    = prometheus.NewDesc("vidfarm_agent_gpu_temperature_celsius", "Die temperature of each GPU (NVML).", gpuLabels, nil)
	descGPUErrors  = prometheus.NewDesc("vidfarm_agent_gpu_sample_errors", "1 when the last GPU sample could not read everything (see the agent's log).", nil, nil)
	descVirtualGPU = prometheus.NewDesc("vidfarm_agent_virtual_gpus", "Procedural render slots advertised on a machine without NVIDIA GPUs.", nil, nil)
	descRunnerUp   = prometheus.NewDesc("vidfarm_agent_runner_up",
		"1 while a runner's models are advertised: it passes its health check and fits a GPU of the node.", []string{"runner", "kind"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRegistered, descWorkDir, descGPUTotal, descGPUUsed, descGPUUtil, descGPUTemp, descGPUErrors, descVirtualGPU, descRunnerUp, descNodeState} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	cred, _ := a.session()
	ch <- prometheus.MustNewConstMetric(descRegistered, prometheus.GaugeValue, boolValue(cred != ""))
	a.collectNodeState(ch)
	if size, err := dirSize(a.cfg.WorkDir); err == nil {
		ch <- prometheus.MustNewConstMetric(descWorkDir, prometheus.GaugeValue, float64(size))
	}
	for _, r := range a.runners {
		ch <- prometheus.MustNewConstMetric(descRunnerUp, prometheus.GaugeValue, boolValue(r.isUp()), r.spec.Name, r.spec.Kind)
	}
	if a.capacity.Virtual {
		ch <- prometheus.MustNewConstMetric(descVirtualGPU, prometheus.GaugeValue, float64(len(a.capacity.GPUs)))
		return
	}
	gpus, err := a.cfg.SampleGPUs()
	if err != nil {
		a.log.Warn("GPU sample for metrics incomplete", "err", err)
	}
	ch <- prometheus.MustNewConstMetric(descGPUErrors, prometheus.GaugeValue, boolValue(err != nil))
	const mib = 1 << 20
	for _, g := range gpus {
		if g.Error != "" {
			continue
		}
		labels := []string{strconv.Itoa(g.Index), g.UUID, g.Name}
		ch <- prometheus.MustNewConstMetric(descGPUTotal, prometheus.GaugeValue, float64(g.MemoryTotalMB*mib), labels...)
		ch <- prometheus.MustNewConstMetric(descGPUUsed, prometheus.GaugeValue, float64((g.MemoryTotalMB-min(g.MemoryFreeMB, g.MemoryTotalMB))*mib), labels...)
		if g.UtilizationGPUPercent != nil {
			ch <- prometheus.MustNewConstMetric(descGPUUtil, prometheus.GaugeValue, float64(*g.UtilizationGPUPercent)/100, labels...)
		}
		if g.TemperatureC != nil {
			ch <- prometheus.MustNewConstMetric(descGPUTemp, prometheus.GaugeValue, float64(*g.TemperatureC), labels...)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
