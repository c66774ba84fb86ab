package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// anonMemory reports the memory the process owns (RssAnon in
// /proc/self/status), where process_resident_memory_bytes also counts the
// pages of files it maps: bbolt maps the whole state file, so the resident
// total rises with history while the process's own memory does not (issue
// 13 measures RssAnon for that reason). Linux only: elsewhere the series is
// absent.
var anonMemory = prometheus.NewDesc("vidfarm_process_anon_resident_bytes",
	"Resident memory the process owns (RssAnon): process_resident_memory_bytes less the file pages it maps, such as the state file's, which the kernel can drop.", nil, nil)

type anonCollector struct{}

func (anonCollector) Describe(ch chan<- *prometheus.Desc) { ch <- anonMemory }

func (anonCollector) Collect(ch chan<- prometheus.Metric) {
	if n, ok := rssAnon(); ok {
		ch <- prometheus.MustNewConstMetric(anonMemory, prometheus.GaugeValue, float64(n))
	}
}

// rssAnon reads RssAnon from /proc/self/status, in bytes (procfs, which the
// Prometheus process collector reads its figures with, parses it).
func rssAnon() (uint64, bool) {
	p, err := procfs.Self()
	if err != nil {
		return 0, false
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, false
	}
	return st.RssAnon, st.RssAnon > 0 // 0: a kernel without the field (before 4.5)
}
