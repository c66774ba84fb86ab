package fsm

import (
	"fmt"
	"strconv"
)

// Command levels: what a binary understands, so that a rolling upgrade never
// puts into the log an entry some member cannot apply (it would panic on it;
// see FSM.Apply). Type numbers only grow (registry.go): a binary's level is
// the highest command type it can apply, and a binary of level L applies
// every type up to L. Each member's level is recorded in the replicated
// state (Member.Understands, set by SetMember when the node joins, when a
// leader publishes itself and when a follower reports a change), and the
// leader proposes a type above AlwaysUnderstood only when every server of
// the Raft configuration understands it (raftnode.Node.Apply).

// Baseline is the level of a member whose record has no level: it was
// written by a release from before members recorded theirs, and that
// release knew every type up to 51. A node is upgraded from the release
// just before it (docs/cluster.md, "Rolling upgrades"), so an absent level
// is that release's, not "unknown".
const Baseline = SweepIntermediatesType

// AlwaysUnderstood is the highest type every binary that can be a member
// understands: the membership commands that carry the levels themselves.
// Commands up to it are never gated; a binary cannot hide them.
const AlwaysUnderstood = RemoveMemberType

// hideAbove, when set at link time, makes this binary understand no command
// type above it, as an older release would not:
//
//	go build -ldflags "-X github.com/vidfarm/vidfarm/controlplane/fsm.hideAbove=49" ./cmd/vidfarm
//
// The hidden types keep their names (for logs) but do not decode: a log
// entry of one panics the apply. It exists for the rolling-upgrade test
// (cmd/vidfarm TestRollingUpgrade); a value that is not a type number from
// AlwaysUnderstood to 255 stops the binary at start.
var hideAbove string

// understood is this binary's level: the highest type in its registry.
var understood = hide(hideAbove)

// hide drops the registry's entries above the level named by above (empty:
// none) and returns the highest type left.
func hide(above string) MessageType {
	if above != "" {
		n, err := strconv.ParseUint(above, 10, 8)
		if err != nil || MessageType(n) < AlwaysUnderstood {
			panic(fmt.Sprintf("fsm: hideAbove=%q: want a command type from %d to 255", above, AlwaysUnderstood))
		}
		for t := int(n) + 1; t < len(registry); t++ {
			registry[t].new, registry[t].apply = nil, nil
		}
	}
	top := MessageType(0)
	for t, e := range registry {
		if e.new != nil {
			top = MessageType(t)
		}
	}
	return top
}

// Understood is the highest command type this binary can apply: its level.
func Understood() MessageType { return understood }

// Level is what the member understands by its record: Understands, or
// Baseline when the record has none.
func (m Member) Level() MessageType {
	if m.Understands == 0 {
		return Baseline
	}
	return m.Understands
}

// ServerLevel is what one server of the Raft configuration is known to
// understand. Level is 0 when the state holds no record of it (a server
// added by hand that never reported, or one just added whose record is not
// applied yet): it is then taken to understand nothing that is gated.
type ServerLevel struct {
	ID    string
	Level MessageType
}

// ServerLevels returns the level of each server in ids, in that order: self
// (the node asking) at this binary's own level, every other by its record.
func (f *FSM) ServerLevels(ids []string, self string) []ServerLevel {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]ServerLevel, len(ids))
	for i, id := range ids {
		out[i].ID = id
		switch m, ok := f.s.members[id]; {
		case id == self:
			out[i].Level = understood
		case ok:
			out[i].Level = m.Level()
		}
	}
	return out
}

// NotUnderstanding returns the servers of levels that cannot apply type t;
// none for a type up to AlwaysUnderstood.
func NotUnderstanding(t MessageType, levels []ServerLevel) []ServerLevel {
	if t <= AlwaysUnderstood {
		return nil
	}
	var out []ServerLevel
	for _, l := range levels {
		if l.Level < t {
			out = append(out, l)
		}
	}
	return out
}

// LowestLevel is the lowest level among levels: the highest type every one
// of them understands (0 for none).
func LowestLevel(levels []ServerLevel) MessageType {
	if len(levels) == 0 {
		return 0
	}
	low := levels[0].Level
	for _, l := range levels[1:] {
		low = min(low, l.Level)
	}
	return low
}

// RecordedLevel is the lowest level the state's member records give (0
// without records): the newest command types the cluster may have used,
// since the leader proposes a type only once every member understands it.
// A binary below it would stop on the first such entry of the log.
func (f *FSM) RecordedLevel() MessageType {
	ms := f.Members()
	if len(ms) == 0 {
		return 0
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return LowestLevel(f.ServerLevels(ids, ""))
}
