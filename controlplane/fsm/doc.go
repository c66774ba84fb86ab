// Package fsm is the control plane's replicated state machine: accounts, API keys,
// credits, folders, videos, idempotency records, webhook endpoints and the webhook
// outbox (events and their deliveries), changed only by typed commands that travel
// through the Raft log.
//
// Every command is one message-type byte followed by a msgpack payload (see
// commands.go). The leader stamps ids and times into a command before proposing it,
// so Apply never reads a clock, a random source or the disk: every replica that
// applies the same log reaches the same state. Domain refusals (too few credits, the
// free project already used, a duplicate idempotency key) are returned as error
// values in the apply response, never as panics; a payload that does not decode is a
// bug and panics.
//
// Reads go through the FSM's methods, which return copies the caller may keep.
// Snapshots stream the whole state as a sequence of typed records (snapshot.go) and
// Restore rebuilds it exactly, derived indexes included.
//
// Adding a command: see README.md in the controlplane folder.
package fsm
