package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// handBackDrained enforces drain deadlines: once a draining node's deadline
// has passed, the tasks it still runs go back to the queue (HandBackDrained)
// without counting a failure, and the node's agent learns at its next
// heartbeat that those leases are stale. It proposes only when the FSM
// says a hand-back is due, so an idle farm writes nothing to the log. The
// deadline is in the replicated state, so a new leader enforces it too.
func (s *Server) handBackDrained(ctx context.Context) {
	now := time.Now().UnixNano()
	if !s.Node.FSM.HandBackDue(now) {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := fsm.Do(actx, s.Node, &fsm.HandBackDrained{Now: now})
	if err != nil {
		if !s.gated("hand back drained", err) && ctx.Err() == nil {
			s.log.Warn("hand back the tasks of drained nodes", "err", err)
		}
		return
	}
	for _, l := range res.Leases {
		s.log.Info("drain deadline passed: task handed back to the queue", "node_id", l.NodeID, "task_id", l.TaskID,
			"video_id", l.VideoID, "token", l.Token)
	}
	if len(res.Leases) > 0 {
		s.notify.Notify()
	}
}

// nodeMaintenanceDesc counts render nodes by maintenance state, so a
// dashboard shows how much of the farm an operator has taken out.
var nodeMaintenanceDesc = prometheus.NewDesc("vidfarm_render_nodes_maintenance",
	"Registered render nodes by maintenance state: active, cordoned, draining (tasks still running) or drained (draining, running nothing).",
	[]string{"state"}, nil)

// maintenanceCollector exports nodeMaintenanceDesc at scrape time.
type maintenanceCollector struct{ f *fsm.FSM }

func (c maintenanceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nodeMaintenanceDesc }

func (c maintenanceCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{"active": 0, fsm.MaintenanceCordoned: 0, fsm.MaintenanceDraining: 0, "drained": 0}
	for _, v := range c.f.Nodes() {
		switch m := v.Node.Maintenance; {
		case m == nil:
			counts["active"]++
		case m.State == fsm.MaintenanceDraining && v.Info.Leases == 0:
			counts["drained"]++
		default:
			counts[m.State]++
		}
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(nodeMaintenanceDesc, prometheus.GaugeValue, float64(n), state)
	}
}
