package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// An operator may cordon or drain this node on the control plane (`vidfarm
// admin node cordon|drain`); every heartbeat answer says which. The agent
// does nothing different (the control plane gives a cordoned node no work
// and names a drained node's handed-back leases stale), but says so in its
// log and its metrics, so that whoever looks at the machine knows why it
// is idle.

// nodeStates are the values of the vidfarm_agent_node_state gauge's label.
var nodeStates = []string{wire.NodeActive, wire.NodeCordoned, wire.NodeDraining}

const descNodeStateHelp = "1 for the maintenance state the control plane last gave this node (active, cordoned or draining), 0 for the others."

var descNodeState = prometheus.NewDesc("vidfarm_agent_node_state", descNodeStateHelp, []string{"state"}, nil)

// noteMaintenance records the state a heartbeat answer gives and logs a
// change.
func (a *agent) noteMaintenance(resp wire.HeartbeatResponse) {
	state := resp.Maintenance
	if state == "" {
		state = wire.NodeActive
	}
	a.mu.Lock()
	old := a.nodeState
	a.nodeState = state
	a.mu.Unlock()
	if old == state {
		return
	}
	attrs := []any{"state", state, "previous", old}
	if resp.DrainDeadline != nil {
		attrs = append(attrs, "drain_deadline", resp.DrainDeadline.UTC().Format(time.RFC3339))
	}
	if resp.MaintenanceReason != "" {
		attrs = append(attrs, "reason", resp.MaintenanceReason)
	}
	switch state {
	case wire.NodeActive:
		a.log.Info("node maintenance state changed: taking new work", attrs...)
	case wire.NodeCordoned:
		a.log.Info("node maintenance state changed: cordoned by an operator, no new work; running tasks go on", attrs...)
	default:
		a.log.Info("node maintenance state changed: draining, no new work; tasks still running at the deadline go back to the queue", attrs...)
	}
}

// collectNodeState writes the vidfarm_agent_node_state gauge.
func (a *agent) collectNodeState(ch chan<- prometheus.Metric) {
	a.mu.Lock()
	cur := a.nodeState
	a.mu.Unlock()
	for _, s := range nodeStates {
		ch <- prometheus.MustNewConstMetric(descNodeState, prometheus.GaugeValue, boolValue(s == cur), s)
	}
}
