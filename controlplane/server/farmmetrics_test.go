package server_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// metricSample reads one series (name and labels exactly as exposed) from a
// /metrics page.
func metricSample(page, series string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// The farm collector reports the nodes and their GPUs by state, the waits of
// the queued tasks, and the data directory's disk, and follows a lease.
func TestFarmMetrics(t *testing.T) {
	h := start(t, withAgent(30*time.Second))
	_, key := h.account("pro", 10_000)
	body := map[string]any{"mode": "manual", "prompt": "a fox", "model": "wan-2.2-a14b", "resolution": "480p"}
	h.create(key, body)
	h.create(key, body)
	cred := h.registerNode("gpu-box")

	type want struct {
		series string
		value  float64
	}
	check := func(when string, wants []want) {
		t.Helper()
		page := h.adminGet("/metrics")
		for _, w := range wants {
			got, ok := metricSample(page, w.series)
			switch {
			case !ok:
				t.Errorf("%s: /metrics has no %s", when, w.series)
			case got != w.value:
				t.Errorf("%s: %s = %v, want %v", when, w.series, got, w.value)
			}
		}
		for _, series := range []string{"vidfarm_data_dir_avail_bytes", "vidfarm_data_dir_size_bytes"} {
			if v, ok := metricSample(page, series); !ok || v <= 0 {
				t.Errorf("%s: %s = %v (present %v), want a positive size", when, series, v, ok)
			}
		}
		avail, _ := metricSample(page, "vidfarm_data_dir_avail_bytes")
		size, _ := metricSample(page, "vidfarm_data_dir_size_bytes")
		if avail > size {
			t.Errorf("%s: %v bytes free on a filesystem of %v", when, avail, size)
		}
	}
	const render = `{kind="render",model="wan-2.2-a14b"}`
	check("two videos queued", []want{
		{`vidfarm_nodes{state="live"}`, 1}, {`vidfarm_nodes{state="down"}`, 0}, {`vidfarm_nodes{state="draining"}`, 0},
		{`vidfarm_node_gpus{state="idle"}`, 2}, {`vidfarm_node_gpus{state="busy"}`, 0},
		{`vidfarm_queue_age_seconds_count` + render, 2},
		{`vidfarm_queue_age_seconds_bucket{kind="render",model="wan-2.2-a14b",le="+Inf"}`, 2},
	})
	a := h.leaseTask(cred, 5)
	if a.TaskID == "" {
		t.Fatal("the node was offered no task with two videos queued")
	}
	check("one render leased", []want{
		{`vidfarm_queue_age_seconds_count` + render, 1},
		{`vidfarm_node_gpus{state="busy"}`, float64(len(a.GPUIDs))},
		{`vidfarm_node_gpus{state="idle"}`, float64(2 - len(a.GPUIDs))},
	})
}
