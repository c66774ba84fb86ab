package server

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
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

// rssAnon reads RssAnon from /proc/self/status, in bytes.
func rssAnon() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("RssAnon:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "1234 kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
