package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// GPU is one GPU of a node, or one MIG slice reported as its own GPU.
type GPU struct {
	ID            string  `json:"id"` // unique within the node (UUID or MIG UUID)
	MemoryTotalGB float64 `json:"memory_total_gb"`
	// MemoryFreeGB is the memory the node offers to vidfarm on this GPU
	// when no vidfarm task runs on it (NVML free memory at registration).
	// GPUs are allocated whole, so a task fits a GPU when it needs at most
	// this much; the scheduler tracks which GPUs its leases hold.
	MemoryFreeGB float64 `json:"memory_free_gb"`
	MIG          bool    `json:"mig,omitempty"` // a MIG slice: only single-GPU tasks use it
	// Model is the GPU's product name as NVML gives it ("NVIDIA H100 80GB
	// HBM3"; "virtual" for a procedural slot). The scheduler does not read
	// it: it tells the measured task times apart by GPU kind, which a twin
	// of the farm (bench sim --from-farm) calibrates against.
	Model string `json:"model,omitempty"`
}

// Node is what an agent reports about its machine.
type Node struct {
	ID         string   `json:"id"`
	GPUs       []GPU    `json:"gpus,omitempty"`
	CPUSlots   int      `json:"cpu_slots"`             // concurrent CPU task slots
	Tools      []string `json:"tools,omitempty"`       // installed executables
	Models     []string `json:"models,omitempty"`      // model ids it can run
	WarmModels []string `json:"warm_models,omitempty"` // models already loaded / on disk
	// Draining nodes keep their leases but get no new work.
	Draining bool `json:"draining,omitempty"`
	// LastHeartbeat is set by the state (UpsertNode, Heartbeat, Place);
	// its value on input is ignored.
	LastHeartbeat time.Time `json:"last_heartbeat"`
}

// NodeInfo is a read-only view of a node and its current use.
type NodeInfo struct {
	Node
	Down bool `json:"down"` // silent for longer than Config.NodeTimeout
	// Cordoned is the operator's mark (SetCordoned): no new work, whatever
	// the agent reports; kept when the node registers again.
	Cordoned     bool     `json:"cordoned,omitempty"`
	FreeCPUSlots int      `json:"free_cpu_slots"`
	IdleGPUs     []string `json:"idle_gpus,omitempty"`
	Leases       int      `json:"leases"`
}

type gpuSlot struct {
	id    string
	memGB float64
	mig   bool
	busy  *task
}

// node is the mutable record behind NodeInfo.
type node struct {
	spec    Node // normalized copy; LastHeartbeat unused (see lastHB)
	models  map[string]bool
	tools   map[string]bool
	warm    map[string]bool
	gpus    []gpuSlot // best-fit order: memory ascending, then id
	usedCPU int
	lastHB  int64
	down    bool
	capList []capEntry // the classes its hardware can run
	free    freeView   // scratch for Place
	leased  []*task    // tasks it holds leases on
	// cordoned is the operator's mark (maintenance.go), apart from the
	// agent's own Draining so that a heartbeat never lifts it.
	cordoned bool
	// removed is set by RemoveNode: a NodeRef to this record is stale (a
	// node registering again under the id gets a new record).
	removed bool
}

func (n *node) live() bool { return !n.down && !n.spec.Draining && !n.cordoned }

func (n *node) freeCPU() int { return max(n.spec.CPUSlots-n.usedCPU, 0) }

func (n *node) info() NodeInfo {
	spec := n.spec
	spec.GPUs = slices.Clone(n.spec.GPUs)
	spec.Tools = slices.Clone(n.spec.Tools)
	spec.Models = slices.Clone(n.spec.Models)
	spec.WarmModels = slices.Clone(n.spec.WarmModels)
	spec.LastHeartbeat = fromMS(n.lastHB)
	out := NodeInfo{Node: spec, Down: n.down, Cordoned: n.cordoned, FreeCPUSlots: n.freeCPU(), Leases: len(n.leased)}
	for i := range n.gpus {
		g := &n.gpus[i]
		if g.busy == nil {
			out.IdleGPUs = append(out.IdleGPUs, g.id)
		}
	}
	slices.Sort(out.IdleGPUs)
	return out
}

func validateNode(n Node) error {
	if n.ID == "" {
		return fmt.Errorf("%w: node id is required", ErrInvalid)
	}
	if n.CPUSlots < 0 {
		return fmt.Errorf("%w: node %s: cpu_slots must be >= 0", ErrInvalid, n.ID)
	}
	ids := make(map[string]bool, len(n.GPUs))
	for _, g := range n.GPUs {
		bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
		switch {
		case g.ID == "" || ids[g.ID]:
			return fmt.Errorf("%w: node %s: GPU ids must be unique and non-empty (%q)", ErrInvalid, n.ID, g.ID)
		case bad(g.MemoryTotalGB) || bad(g.MemoryFreeGB) || g.MemoryFreeGB > g.MemoryTotalGB:
			return fmt.Errorf("%w: node %s: GPU %s: need 0 <= memory_free_gb <= memory_total_gb", ErrInvalid, n.ID, g.ID)
		}
		ids[g.ID] = true
	}
	return nil
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// UpsertNode registers a node or replaces what it reports (GPUs, slots,
// tools, models, warm models, draining). Leases it holds are kept, on the
// GPUs with the same ids. It counts as a heartbeat.
func (s *State) UpsertNode(spec Node, now time.Time) error {
	if err := validateNode(spec); err != nil {
		return err
	}
	spec.GPUs = slices.Clone(spec.GPUs)
	spec.Tools = sortedSet(spec.Tools)
	spec.Models = sortedSet(spec.Models)
	spec.WarmModels = sortedSet(spec.WarmModels)
	spec.LastHeartbeat = time.Time{}

	n, ok := s.nodes[spec.ID]
	if ok {
		s.countCapable(n, -1)
	} else {
		n = &node{}
		s.nodes[spec.ID] = n
	}
	s.setTools(n, spec.Tools)
	n.spec = spec
	n.models = setOf(spec.Models)
	n.warm = setOf(spec.WarmModels)
	n.gpus = make([]gpuSlot, len(spec.GPUs))
	for i, g := range spec.GPUs {
		n.gpus[i] = gpuSlot{id: g.ID, memGB: g.MemoryFreeGB, mig: g.MIG}
	}
	slices.SortFunc(n.gpus, func(a, b gpuSlot) int {
		if c := cmp.Compare(a.memGB, b.memGB); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for _, t := range n.leased {
		for _, id := range t.lease.gpus {
			if g := n.gpu(id); g != nil {
				g.busy = t
			}
		}
	}
	n.lastHB = ms(now)
	n.down = false
	s.fillCapList(n)
	s.countCapable(n, +1)
	s.releaseFor(n, ms(now))
	return nil
}

// fillCapList lists the classes n can ever serve.
func (s *State) fillCapList(n *node) {
	n.capList = n.capList[:0]
	for _, c := range s.classes {
		if n.staticFit(&c.req) {
			n.capList = append(n.capList, n.capEntry(c))
		}
	}
}

// SetTools replaces a node's tools, keeping everything else about it: its
// leases, heartbeat and down mark. Unlike UpsertNode it is not a word from
// the node, so a node that went silent stays down.
func (s *State) SetTools(nodeID string, tools []string) error {
	n, err := s.node(nodeID)
	if err != nil {
		return err
	}
	s.countCapable(n, -1)
	s.setTools(n, sortedSet(tools))
	s.fillCapList(n)
	s.countCapable(n, +1)
	return nil
}

// SetDraining marks a node draining (no new work; its leases run on) or
// not.
func (s *State) SetDraining(nodeID string, draining bool) error {
	n, err := s.node(nodeID)
	if err != nil {
		return err
	}
	s.countCapable(n, -1)
	n.spec.Draining = draining
	s.countCapable(n, +1)
	return nil
}

// RemoveNode forgets a node. Its leases are revoked and their tasks
// requeued without counting a failure (the node left, the task did not
// fail); the revoked leases are returned, by token.
func (s *State) RemoveNode(nodeID string, now time.Time) ([]Lease, error) {
	n, err := s.node(nodeID)
	if err != nil {
		return nil, err
	}
	out := s.handBack(n, ms(now))
	s.countCapable(n, -1)
	s.countTools(n.spec.Tools, -1)
	delete(s.nodes, nodeID)
	n.removed = true
	return out, nil
}

// setTools gives n tools (sorted, without duplicates), keeping the count of
// nodes per tool (NodesWithTool) in step.
func (s *State) setTools(n *node, tools []string) {
	s.countTools(n.spec.Tools, -1)
	n.spec.Tools, n.tools = tools, setOf(tools)
	s.countTools(tools, 1)
}

// countTools adds d to the count of each of a node's tools.
func (s *State) countTools(tools []string, d int) {
	for _, t := range tools {
		if s.toolNodes[t] += d; s.toolNodes[t] == 0 {
			delete(s.toolNodes, t)
		}
	}
}

// NodesWithTool is how many registered nodes (down or cordoned ones
// included) have tool: what a graph built now may require, knowing some
// node can take it.
func (s *State) NodesWithTool(tool string) int { return s.toolNodes[tool] }

// Node returns a view of one node.
func (s *State) Node(id string) (NodeInfo, bool) {
	n, ok := s.nodes[id]
	if !ok {
		return NodeInfo{}, false
	}
	return n.info(), true
}

// GPUModel is the product name node id reported for its GPU gpuID; ""
// when either is unknown. It copies nothing (Node copies the whole spec).
func (s *State) GPUModel(id, gpuID string) string {
	if n, ok := s.nodes[id]; ok {
		for _, g := range n.spec.GPUs {
			if g.ID == gpuID {
				return g.Model
			}
		}
	}
	return ""
}

// Nodes returns views of all nodes, by id.
func (s *State) Nodes() []NodeInfo {
	out := make([]NodeInfo, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, n.info())
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *State) node(id string) (*node, error) {
	n, ok := s.nodes[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	return n, nil
}

// touch records a sign of life from n at now, reviving it if it was down.
func (s *State) touch(n *node, now int64) {
	n.lastHB = max(n.lastHB, now)
	if n.down {
		n.down = false
		s.countCapable(n, +1) // no-op while draining
	}
}
