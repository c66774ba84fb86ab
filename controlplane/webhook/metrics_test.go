package webhook

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// TestDeliveriesFinishedExportedAtZero: both ends of a delivery are on
// /metrics before any delivery ends, so the first abandonment is a rise
// from 0 that increase() sees (VidfarmWebhookDeliveriesAbandoned), not a
// series that appears at 1.
func TestDeliveriesFinishedExportedAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, fsm.New())
	const name = "vidfarm_webhook_deliveries_finished_total"
	help := helpOf(t, reg, name)
	for _, tc := range []struct {
		name                 string
		state                string // what ends next; "" for nothing
		delivered, abandoned int
	}{
		{"before any delivery ends", "", 0, 0},
		{"a retry is no end", fsm.DeliveryPending, 0, 0},
		{"the first abandonment", fsm.DeliveryAbandoned, 0, 1},
		{"a delivery", fsm.DeliveryDelivered, 1, 1},
	} {
		if tc.state != "" {
			m.finished(tc.state)
		}
		// The exposition as scraped: both series, and no other.
		want := fmt.Sprintf(`
# HELP %[1]s %[2]s
# TYPE %[1]s counter
%[1]s{state="abandoned"} %[4]d
%[1]s{state="delivered"} %[3]d
`, name, help, tc.delivered, tc.abandoned)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), name); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// helpOf is the HELP text of the named family in reg, so that a test
// comparing its exposition checks the series, not the wording.
func helpOf(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetHelp()
		}
	}
	t.Fatalf("no %s on the registry", name)
	return ""
}
