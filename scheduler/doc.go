// Package scheduler holds vidfarm's render work: videos as graphs of tasks,
// the GPU nodes that run them, the ready queue, the placement policy, and
// fenced leases. It is the state the control plane keeps inside its Raft
// FSM, and the same code the simulator in bench drives with simulated time.
//
// # Work
//
// A video becomes a small graph of tasks (see ManualGraph and AutoGraph):
//
//	manual: render (GPU) -> finalize (CPU)
//	auto:   plan (CPU) -> tts (CPU) ------------------> composite (CPU)
//	                   \-> scene-0001 .. scene-N (GPU) -/
//
// The scene count of an auto video is known only once plan has run: plan's
// Complete returns Outcome.NeedsScenes and the caller then calls AddScenes.
// Every task declares its Requirements: GPU count, GPU memory per GPU,
// model id, CPU slots and tools. Only tasks whose dependencies are done are
// ready.
//
// # Placement
//
// Agents pull: State.Place(nodeID, now, leaseDuration) picks one ready task
// for that node. Hard constraints come first, then priority, then
// per-account fair share (fewest running tasks, then round robin), then
// age; a warm model on the node breaks fair-share ties within a bounded
// window. Ready tasks are indexed by priority, requirement class and
// account, so a placement looks at a few dozen buckets and never scans the
// tasks. README.md draws the pipeline.
//
// # Leases and fencing
//
// Every lease carries a fencing token from a counter in the state. Renew,
// Heartbeat, Progress, Complete and Fail accept a report only from the
// current holder (node id and token); anyone else gets ErrStaleLease.
// Expire(now) requeues leases whose deadline passed; a task that fails or
// expires on Config.MaxNodeFailures distinct nodes (or Config.MaxAttempts
// times) fails its video, reported in Outcome.VideoFailed so the caller
// refunds.
//
// # Drivers that call it millions of times
//
// PrepareSubmit and PrepareScenes build a video's or its scenes' records
// without a State (on any goroutine); SubmitPrepared and AddPreparedScenes
// enter them. PlaceGrant and CompleteGrant are Place and Complete without
// the copies a Lease makes; NodeRef and AccountRef name a node (for
// PlaceGrant) and an account (SubmitPreparedFor) without a lookup by id.
// The simulator in bench uses them; the results are the same as through
// Submit, AddScenes, Place and Complete.
//
// # Status
//
// VideoStatus gives a video's weighted percent and, while it waits, an
// estimated queue position and a Reason code with a human message.
//
// # Determinism
//
// The package does no I/O, reads no clock, starts no goroutine and uses no
// randomness: time is an argument (kept at millisecond precision), fencing
// tokens and fair-share stamps are counters in the state, every choice is
// made by a total order on unique keys, and no result depends on the order
// of a map iteration. The same calls on any replica, or on a State rebuilt
// with Restore from a Snapshot, give the same results. A State is not safe
// for concurrent use; Snapshot and Clone give independent copies.
//
// # Models
//
// The scheduler does not import the models catalog yet: callers pass GPU
// memory, GPU count and model id in Requirements. A later integration fills
// them from the catalog.
package scheduler
