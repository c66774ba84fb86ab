package raftnode

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// repeatWindow is how long a Raft warning or error about one peer is not
// written again. Raft retries an unreachable peer about twice a second and
// logs each failure at ERROR ("failed to heartbeat to", "failed to make
// requestVote RPC"): a member down for an hour wrote some 7,000 lines on
// each survivor, which buried everything else and cost what log storage
// costs. One line per peer per window, with how many were left out, says
// the same.
const repeatWindow = 30 * time.Second

// repeatKeys are the arguments that tell one peer's lines from another's.
var repeatKeys = map[string]bool{"peer": true, "target": true, "id": true, "address": true, "server-id": true}

// repeats decides which Raft warnings and errors are written: the first of
// a kind (component, level, message, peer), then none of it until the
// window has passed since the last one written, which then carries
// "repeated": how many were left out. Shared by every logger made from one
// newRaftLog.
type repeats struct {
	mu     sync.Mutex
	now    func() time.Time
	window time.Duration
	seen   map[string]*repeat
}

type repeat struct {
	written time.Time
	skipped int
}

func newRepeats() *repeats {
	return &repeats{now: time.Now, window: repeatWindow, seen: map[string]*repeat{}}
}

// admit says whether a line of kind key is written now, and how many of its
// kind were left out since the last one written.
func (r *repeats) admit(key string) (bool, int) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.seen[key]
	if e == nil {
		if len(r.seen) >= 256 { // kinds not seen for a window are forgotten
			for k, old := range r.seen {
				if now.Sub(old.written) >= r.window {
					delete(r.seen, k)
				}
			}
		}
		r.seen[key] = &repeat{written: now}
		return true, 0
	}
	if now.Sub(e.written) < r.window {
		e.skipped++
		return false, 0
	}
	n := e.skipped
	e.written, e.skipped = now, 0
	return true, n
}

// repeatKey names a line's kind: its logger, level, message and the peer
// its arguments name, if any.
func repeatKey(name string, level hclog.Level, msg string, implied, args []any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%d\x00%s", name, level, msg)
	for _, kv := range [][]any{implied, args} {
		for i := 0; i+1 < len(kv); i += 2 {
			if k, ok := kv[i].(string); ok && repeatKeys[k] {
				fmt.Fprintf(&b, "\x00%s=%v", k, hclogValue(kv[i+1]))
			}
		}
	}
	return b.String()
}
