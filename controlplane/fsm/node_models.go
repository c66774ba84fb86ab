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
	return Nothing{}, s.setOffer(c.NodeID, c.Now, func(spec *scheduler.Node) {
		spec.Models, spec.WarmModels = c.Models, c.WarmModels
	})
}

// setOffer changes in place what registered node id offers the scheduler
// (change edits its spec), as a word from the node: its GPUs, leases,
// drain and cordon stay.
func (s *state) setOffer(id string, now int64, change func(*scheduler.Node)) error {
	info, ok := s.sched.Node(id)
	if !ok {
		return fmt.Errorf("node %s: %w", id, scheduler.ErrUnknownNode)
	}
	spec := info.Node
	change(&spec)
	if err := s.sched.UpsertNode(spec, timeOf(now)); err != nil {
		return fmt.Errorf("node %s: %w", id, err)
	}
	return nil
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
	n := s.nodes[c.NodeID]
	if n == nil {
		return Nothing{}, fmt.Errorf("node %s: %w", c.NodeID, scheduler.ErrUnknownNode)
	}
	voices := normalizeVoices(c.Voices)
	err := s.setOffer(c.NodeID, c.Now, func(spec *scheduler.Node) {
		spec.Models, spec.WarmModels, spec.Tools = c.Models, c.WarmModels, s.nodeTools(c.Tools, voices)
	})
	if err != nil {
		return Nothing{}, err
	}
	// Added before the old are removed, as at registration: a voice the
	// node keeps stays in the catalogue throughout.
	s.voices.add(voices)
	s.voices.remove(n.Voices)
	s.voices.sync()
	n.Voices = voices
	return Nothing{}, nil
}
