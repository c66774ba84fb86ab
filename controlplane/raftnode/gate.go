package raftnode

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// ErrNotUnderstood means a command was not proposed because a server of the
// cluster runs a binary that could not apply its type (an older release,
// mid-upgrade): it would have panicked on the entry. Nothing was written;
// the same command succeeds once every member is upgraded. The error is a
// *NotUnderstoodError naming the members.
var ErrNotUnderstood = errors.New("a cluster member does not understand the command")

// NotUnderstoodError is ErrNotUnderstood with the command's type and the
// servers that must be upgraded before it can be proposed.
type NotUnderstoodError struct {
	Type    fsm.MessageType
	Members []fsm.ServerLevel
}

func (e *NotUnderstoodError) Error() string {
	return fmt.Sprintf("%s (type %d) not proposed: %s must be upgraded first", e.Type, uint8(e.Type), e.Describe())
}

// Unwrap makes errors.Is(err, ErrNotUnderstood) hold.
func (e *NotUnderstoodError) Unwrap() error { return ErrNotUnderstood }

// Describe names each member with its level: "n1 (understands up to 49)",
// or "n4 (has not reported what it understands)".
func (e *NotUnderstoodError) Describe() string {
	parts := make([]string, len(e.Members))
	for i, m := range e.Members {
		parts[i] = DescribeLevel(m)
	}
	return strings.Join(parts, ", ")
}

// DescribeLevel says what one server understands, for logs and answers.
func DescribeLevel(m fsm.ServerLevel) string {
	if m.Level == 0 {
		return m.ID + " (has not reported what it understands)"
	}
	return fmt.Sprintf("%s (understands up to %d)", m.ID, uint8(m.Level))
}

// IDs are the ids of the members that must be upgraded.
func (e *NotUnderstoodError) IDs() []string {
	out := make([]string, len(e.Members))
	for i, m := range e.Members {
		out[i] = m.ID
	}
	return out
}

// Levels returns what every server of the Raft configuration (voters and
// non-voters: all of them apply the log) understands, this node at its own
// binary's level and the others by their records in the state.
func (n *Node) Levels() ([]fsm.ServerLevel, error) {
	fut := n.Raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	servers := fut.Configuration().Servers
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = string(s.ID)
	}
	return n.FSM.ServerLevels(ids, n.cfg.NodeID), nil
}

// CheckUnderstood is the upgrade gate every proposal passes (Apply calls
// it): nil when every server of the configuration can apply type t, else a
// *NotUnderstoodError. Types up to fsm.AlwaysUnderstood pass at once, so
// the hot commands cost nothing. A leader job may call it before work that
// only makes sense if its command will be proposed.
func (n *Node) CheckUnderstood(t fsm.MessageType) error {
	if t <= fsm.AlwaysUnderstood {
		return nil
	}
	levels, err := n.Levels()
	if err != nil {
		return err
	}
	if lag := fsm.NotUnderstanding(t, levels); len(lag) > 0 {
		return &NotUnderstoodError{Type: t, Members: lag}
	}
	return nil
}
