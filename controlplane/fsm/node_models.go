package fsm

import (
	"fmt"

	"github.com/vidfarm/vidfarm/scheduler"
)

// SetNodeModels replaces the models a registered node advertises, and
// those warm on it, keeping its GPUs, leases, drain and cordon: what an
// agent sends when one of its runners comes up or goes down, instead of
// registering again (which would hand its leases back, so the agent had to
// wait for its running tasks first). A lease of a model the node no longer
// advertises runs on; no new one is placed.
type SetNodeModels struct {
	NodeID     string   `msgpack:"node"`
	Models     []string `msgpack:"models"`
	WarmModels []string `msgpack:"warm,omitempty"`
	Now        int64    `msgpack:"now"`
}

func (SetNodeModels) Type() MessageType { return SetNodeModelsType }

func (s *state) applySetNodeModels(c *SetNodeModels) (Nothing, error) {
	info, ok := s.sched.Node(c.NodeID)
	if !ok {
		return Nothing{}, fmt.Errorf("node %s: %w", c.NodeID, scheduler.ErrUnknownNode)
	}
	spec := info.Node
	spec.Models, spec.WarmModels = c.Models, c.WarmModels
	if err := s.sched.UpsertNode(spec, timeOf(c.Now)); err != nil {
		return Nothing{}, fmt.Errorf("node %s: %w", c.NodeID, err)
	}
	return Nothing{}, nil
}
