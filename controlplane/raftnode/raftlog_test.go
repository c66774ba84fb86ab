package raftnode_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

// logSink collects JSON log lines written from many goroutines.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines parses every line; one that is not a JSON object fails the test.
func (s *logSink) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON (%v): %s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// raftLines are the lines with "component":"raft", each checked to have
// slog's keys and none of hclog's.
func raftLines(t *testing.T, all []map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range all {
		for k := range m {
			if strings.HasPrefix(k, "@") {
				t.Errorf("a line has hclog's key %q: %v", k, m)
			}
		}
		if m["component"] != "raft" {
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k].(string); !ok {
				t.Errorf("a Raft line has no %q: %v", k, m)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
			t.Errorf("a Raft line's time %q is not slog's: %v", m["time"], err)
		}
		out = append(out, m)
	}
	return out
}

func hasMsg(lines []map[string]any, msg, level string) bool {
	for _, m := range lines {
		if m["msg"] == msg && m["level"] == level {
			return true
		}
	}
	return false
}

// TestRaftLogsThroughTheServersHandler: a real node given a slog JSON handler
// writes Raft's lines through it, in slog's shape with "component":"raft",
// and at the handler's level: at WARN no INFO line, at DEBUG Raft's INFO
// and DEBUG lines.
func TestRaftLogsThroughTheServersHandler(t *testing.T) {
	run := func(t *testing.T, level slog.Level) []map[string]any {
		sink := &logSink{}
		n := open(t, t.TempDir(), func(c *raftnode.Config) {
			c.Logger = slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: level}))
		})
		// A snapshot: the file snapshot store logs too.
		if err := n.Raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		closeNode(t, n)
		return sink.lines(t)
	}

	t.Run("warn", func(t *testing.T) {
		all := run(t, slog.LevelWarn)
		for _, m := range all {
			if m["level"] != "WARN" && m["level"] != "ERROR" {
				t.Errorf("a %v line with the handler at WARN: %v", m["level"], m)
			}
		}
		// A single node's first election is Raft's WARN line.
		if rl := raftLines(t, all); !hasMsg(rl, "heartbeat timeout reached, starting election", "WARN") {
			t.Errorf("no Raft WARN line at WARN:\n%v", all)
		}
	})

	t.Run("debug", func(t *testing.T) {
		all := run(t, slog.LevelDebug)
		rl := raftLines(t, all)
		for _, want := range []struct{ msg, level string }{
			{"entering leader state", "INFO"},
			{"heartbeat timeout reached, starting election", "WARN"},
			{"calculated votes needed", "DEBUG"},
			{"creating new snapshot", "INFO"}, // the file snapshot store
		} {
			if !hasMsg(rl, want.msg, want.level) {
				t.Errorf("no Raft %s line %q with the handler at DEBUG:\n%v", want.level, want.msg, all)
			}
		}
		// Raft's arguments are attributes of the line.
		for _, m := range rl {
			if m["msg"] == "entering leader state" {
				if _, ok := m["leader"]; !ok {
					t.Errorf("Raft's leader argument is not an attribute: %v", m)
				}
			}
		}
	})
}
