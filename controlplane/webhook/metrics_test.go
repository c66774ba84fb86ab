package webhook

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestDeliveriesFinishedExportedAtZero: both ends of a delivery are on
// /metrics before any delivery ends, so the first abandonment is a rise
// from 0 that increase() sees (VidfarmWebhookDeliveriesAbandoned), not a
// series that appears at 1.
func TestDeliveriesFinishedExportedAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, fsm.New())
	ended := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "vidfarm_webhook_deliveries_finished_total" {
				continue
			}
			for _, s := range mf.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "state" {
						out[l.GetValue()] = s.GetCounter().GetValue()
					}
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		state string // what ends next; "" for nothing
		want  map[string]float64
	}{
		{"before any delivery ends", "", map[string]float64{"delivered": 0, "abandoned": 0}},
		{"a retry is no end", fsm.DeliveryPending, map[string]float64{"delivered": 0, "abandoned": 0}},
		{"the first abandonment", fsm.DeliveryAbandoned, map[string]float64{"delivered": 0, "abandoned": 1}},
		{"a delivery", fsm.DeliveryDelivered, map[string]float64{"delivered": 1, "abandoned": 1}},
	} {
		if tc.state != "" {
			m.finished(tc.state)
		}
		got := ended()
		if len(got) != len(tc.want) || got["delivered"] != tc.want["delivered"] || got["abandoned"] != tc.want["abandoned"] {
			t.Errorf("%s: vidfarm_webhook_deliveries_finished_total by state %v, want %v", tc.name, got, tc.want)
		}
	}
}
