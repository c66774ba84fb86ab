package telemetry

import "github.com/prometheus/client_golang/prometheus"

var (
	gpuLabels   = []string{"node_id", "gpu"}
	descMemUsed = prometheus.NewDesc("vidfarm_node_gpu_memory_used_bytes",
		"Memory in use on each render node's GPU (MIG instance: its own), from the agent's last heartbeat; only on the leader.", gpuLabels, nil)
	descUtil = prometheus.NewDesc("vidfarm_node_gpu_utilization_ratio",
		"Utilisation of each render node's GPU (MIG instance: its parent's), 0 to 1, from the agent's last heartbeat; only on the leader.", gpuLabels, nil)
	descTemp = prometheus.NewDesc("vidfarm_node_gpu_temperature_celsius",
		"Die temperature of each render node's GPU, from the agent's last heartbeat; only on the leader.", gpuLabels, nil)
	descPower = prometheus.NewDesc("vidfarm_node_gpu_power_watts",
		"Power draw of each render node's GPU, from the agent's last heartbeat; only on the leader.", gpuLabels, nil)
)

// Collector exports the Store's fresh samples (stale ones are left out:
// an old value would read as current) as Prometheus gauges. The leader
// alone has samples, so a dashboard sums or takes the max over members.
func (s *Store) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Store }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMemUsed, descUtil, descTemp, descPower} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.s.Each(func(nodeID string, v Sample) {
		if v.Stale {
			return
		}
		for id, g := range v.GPUs {
			ch <- prometheus.MustNewConstMetric(descMemUsed, prometheus.GaugeValue, g.MemoryUsedGB*1e9, nodeID, id)
			if p := g.UtilizationPercent; p != nil {
				ch <- prometheus.MustNewConstMetric(descUtil, prometheus.GaugeValue, *p/100, nodeID, id)
			}
			if p := g.TemperatureC; p != nil {
				ch <- prometheus.MustNewConstMetric(descTemp, prometheus.GaugeValue, *p, nodeID, id)
			}
			if p := g.PowerW; p != nil {
				ch <- prometheus.MustNewConstMetric(descPower, prometheus.GaugeValue, *p, nodeID, id)
			}
		}
	})
}
