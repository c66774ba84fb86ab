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

// SetNodeCapacity replaces, in place like SetNodeModels, everything a
// registered node's runners bring and take away: its models, warm models,
// tools (executables and stage runners, wire.ToolPlanner…) and voices. A
// speech server or planner that fails its health check no longer makes the
// agent stop leasing and register again (until type 67, only models could
// change in place).
type SetNodeCapacity struct {
	NodeID     string   `msgpack:"node"`
	Models     []string `msgpack:"models"`
	WarmModels []string `msgpack:"warm,omitempty"`
	Tools      []string `msgpack:"tools"`
	Voices     []Voice  `msgpack:"voices,omitempty"`
	Now        int64    `msgpack:"now"`
}

func (SetNodeCapacity) Type() MessageType { return SetNodeCapacityType }

func (s *state) applySetNodeCapacity(c *SetNodeCapacity) (Nothing, error) {
	info, ok := s.sched.Node(c.NodeID)
	n := s.nodes[c.NodeID]
	if !ok || n == nil {
		return Nothing{}, fmt.Errorf("node %s: %w", c.NodeID, scheduler.ErrUnknownNode)
	}
	voices := normalizeVoices(c.Voices)
	spec := info.Node
	spec.Models, spec.WarmModels = c.Models, c.WarmModels
	spec.Tools = s.nodeTools(scheduler.Node{Tools: c.Tools}, voices)
	if err := s.sched.UpsertNode(spec, timeOf(c.Now)); err != nil {
		return Nothing{}, fmt.Errorf("node %s: %w", c.NodeID, err)
	}
	// Added before the old are removed, as at registration: a voice the
	// node keeps stays in the catalogue throughout.
	s.voices.add(voices)
	s.voices.remove(n.Voices)
	s.voices.sync()
	n.Voices = voices
	return Nothing{}, nil
}
