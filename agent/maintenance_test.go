package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// TestNodeMaintenanceStateLoggedAndExported: the agent logs each change of
// the state its heartbeat answers carry, once, and the gauge follows it.
func TestNodeMaintenanceStateLoggedAndExported(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	r := startAgent(t, cfg)
	gauge := func(want string) string {
		var b strings.Builder
		b.WriteString("# HELP vidfarm_agent_node_state " + descNodeStateHelp + "\n# TYPE vidfarm_agent_node_state gauge\n")
		for _, s := range nodeStates {
			v := "0"
			if s == want {
				v = "1"
			}
			b.WriteString(`vidfarm_agent_node_state{state="` + s + `"} ` + v + "\n")
		}
		return b.String()
	}
	inState := func(state string) func() bool {
		return func() bool {
			return testutil.GatherAndCompare(reg, strings.NewReader(gauge(state)), "vidfarm_agent_node_state") == nil
		}
	}
	waitFor(t, "the gauge to say active", inState(wire.NodeActive))

	deadline := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	f.setMaintenance(wire.NodeDraining, &deadline, "kernel update")
	waitFor(t, "the gauge to say draining", inState(wire.NodeDraining))
	waitFor(t, "the drain logged", func() bool {
		return strings.Contains(r.logs.String(), `state=draining previous=active drain_deadline=2026-11-27T10:00:00Z reason="kernel update"`)
	})
	f.setMaintenance("", nil, "")
	waitFor(t, "the gauge to say active again", inState(wire.NodeActive))
	waitFor(t, "the uncordon logged", func() bool {
		return strings.Contains(r.logs.String(), "state=active previous=draining")
	})
	if n := strings.Count(r.logs.String(), "node maintenance state changed"); n != 2 {
		t.Fatalf("%d changes logged, want 2 (drained, then active):\n%s", n, r.logs.String())
	}
}
