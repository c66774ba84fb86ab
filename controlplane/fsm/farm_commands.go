package fsm

import "github.com/vidfarm/vidfarm/scheduler"

// Render farm commands: nodes and the leases of their tasks. Every one carries the
// leader's clock reading (Now) and, where it grants or renews a lease, its length;
// the scheduler inside Apply is pure, so replicas agree.

// RegisterNode adds a node (or replaces the node registered under the same name,
// handing its leases back without counting failures). Voices are the
// text-to-speech voices it offers (checked by the agent API); they join the
// farm's voice catalogue while the node is registered.
type RegisterNode struct {
	NodeID   string         `msgpack:"node"`
	Name     string         `msgpack:"name"`
	CredHash [32]byte       `msgpack:"cred_hash"`
	Node     scheduler.Node `msgpack:"spec"`
	Virtual  bool           `msgpack:"virtual"`
	Now      int64          `msgpack:"now"`
	Voices   []Voice        `msgpack:"voices,omitempty"`
}

// HeldLease is a lease a node reports holding, with its task's percent.
type HeldLease struct {
	TaskID  string  `msgpack:"task"`
	Token   uint64  `msgpack:"token"`
	Percent float64 `msgpack:"percent"`
}

// NodeHeartbeat renews the leases a node holds and records their progress.
type NodeHeartbeat struct {
	NodeID   string      `msgpack:"node"`
	Held     []HeldLease `msgpack:"held"`
	Draining bool        `msgpack:"draining"`
	LeaseMS  int64       `msgpack:"lease_ms"`
	Now      int64       `msgpack:"now"`
}

// LeaseTask asks the scheduler for one task for the node.
type LeaseTask struct {
	NodeID  string `msgpack:"node"`
	LeaseMS int64  `msgpack:"lease_ms"`
	Now     int64  `msgpack:"now"`
}

// TaskProgress records a leased task's percent.
type TaskProgress struct {
	NodeID  string  `msgpack:"node"`
	TaskID  string  `msgpack:"task"`
	Token   uint64  `msgpack:"token"`
	Percent float64 `msgpack:"percent"`
	Now     int64   `msgpack:"now"`
}

// CompleteTask finishes a leased task with its artifacts (file name -> blob key).
type CompleteTask struct {
	NodeID          string            `msgpack:"node"`
	TaskID          string            `msgpack:"task"`
	Token           uint64            `msgpack:"token"`
	Artifacts       map[string]string `msgpack:"artifacts"`
	Scenes          int               `msgpack:"scenes"`
	DurationSeconds float64           `msgpack:"duration"`
	Now             int64             `msgpack:"now"`
}

// FailTask reports a leased task as failed.
type FailTask struct {
	NodeID string `msgpack:"node"`
	TaskID string `msgpack:"task"`
	Token  uint64 `msgpack:"token"`
	Reason string `msgpack:"reason"`
	Now    int64  `msgpack:"now"`
	// BackoffMS is the leader's retry backoff base (scheduler
	// FailWithBackoff); 0, as in entries written before it existed, retries
	// at once.
	BackoffMS int64 `msgpack:"backoff_ms,omitempty"`
}

// ExpireLeases requeues leases whose deadline passed; a task that keeps failing
// fails (and refunds) its video. The leader proposes it every second.
type ExpireLeases struct {
	Now int64 `msgpack:"now"`
}

// DeregisterNode removes a node; its tasks go back to the queue, not failed.
type DeregisterNode struct {
	NodeID string `msgpack:"node"`
	Now    int64  `msgpack:"now"`
}

func (RegisterNode) Type() MessageType   { return RegisterNodeType }
func (NodeHeartbeat) Type() MessageType  { return NodeHeartbeatType }
func (LeaseTask) Type() MessageType      { return LeaseTaskType }
func (TaskProgress) Type() MessageType   { return TaskProgressType }
func (CompleteTask) Type() MessageType   { return CompleteTaskType }
func (FailTask) Type() MessageType       { return FailTaskType }
func (ExpireLeases) Type() MessageType   { return ExpireLeasesType }
func (DeregisterNode) Type() MessageType { return DeregisterNodeType }
