package raftnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// jsonLog is an hclog.Logger over a slog JSON handler at level, and what it wrote.
func jsonLog(level slog.Level, source bool) (hclog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return newRaftLog(slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: level, AddSource: source}))), &b
}

func decodeLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON (%v): %s", err, line)
		}
		out = append(out, m)
	}
	return out
}

func TestRaftLogLevels(t *testing.T) {
	for _, tc := range []struct {
		level                         slog.Level
		trace, debug, info, warn, err bool
		get                           hclog.Level
	}{
		{slogLevelTrace, true, true, true, true, true, hclog.Trace},
		{slog.LevelDebug, false, true, true, true, true, hclog.Debug},
		{slog.LevelInfo, false, false, true, true, true, hclog.Info},
		{slog.LevelWarn, false, false, false, true, true, hclog.Warn},
		{slog.LevelError, false, false, false, false, true, hclog.Error},
		{slog.LevelError + 1, false, false, false, false, false, hclog.Off},
	} {
		l, b := jsonLog(tc.level, false)
		got := []bool{l.IsTrace(), l.IsDebug(), l.IsInfo(), l.IsWarn(), l.IsError()}
		want := []bool{tc.trace, tc.debug, tc.info, tc.warn, tc.err}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("handler at %v: Is{Trace,Debug,Info,Warn,Error} = %v, want %v", tc.level, got, want)
				break
			}
		}
		if g := l.GetLevel(); g != tc.get {
			t.Errorf("handler at %v: GetLevel %v, want %v", tc.level, g, tc.get)
		}
		l.Trace("t")
		l.Debug("d")
		l.Info("i")
		l.Warn("w")
		l.Error("e")
		l.Log(hclog.NoLevel, "none")
		l.Log(hclog.Off, "off")
		var msgs []string
		for _, m := range decodeLines(t, b) {
			msgs = append(msgs, m["msg"].(string)+"="+m["level"].(string))
		}
		var wantMsgs []string
		for i, w := range []string{"t=DEBUG-4", "d=DEBUG", "i=INFO", "w=WARN", "e=ERROR"} {
			if want[i] {
				wantMsgs = append(wantMsgs, w)
			}
		}
		if tc.info {
			wantMsgs = append(wantMsgs, "none=INFO") // hclog's NoLevel is Info
		}
		if strings.Join(msgs, " ") != strings.Join(wantMsgs, " ") {
			t.Errorf("handler at %v wrote %v, want %v", tc.level, msgs, wantMsgs)
		}
	}
}

func TestRaftLogShape(t *testing.T) {
	l, b := jsonLog(slog.LevelDebug, true)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7000}
	l.Info("hello", "peer", addr, "error", errors.New("boom"), "n", 3, 7, "not-a-string-key", "fmt", hclog.Fmt("%d-%s", 1, "a"), "lone")
	wal := l.Named("wal").With("segment", 2)
	wal.Error("rotate error")
	l.ResetNamed("other").Warn("reset")
	lines := decodeLines(t, b)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %s", len(lines), b)
	}
	first := lines[0]
	for k, want := range map[string]any{
		"msg": "hello", "level": "INFO", "component": "raft", "peer": "127.0.0.1:7000", "error": "boom",
		"n": 3.0, "7": "not-a-string-key", "fmt": "1-a", hclog.MissingKey: "lone",
	} {
		if first[k] != want {
			t.Errorf("%s = %#v, want %#v (line %v)", k, first[k], want, first)
		}
	}
	if _, ok := first["time"]; !ok {
		t.Errorf("no time: %v", first)
	}
	// AddSource names the caller, not the adapter.
	if src, _ := first["source"].(map[string]any); !strings.HasSuffix(src["file"].(string), "raftlog_internal_test.go") {
		t.Errorf("source %v, want this file", first["source"])
	}
	if w := lines[1]; w["component"] != "raft.wal" || w["segment"] != 2.0 || w["level"] != "ERROR" {
		t.Errorf("named logger's line %v, want component raft.wal with segment 2", w)
	}
	if strings.Count(strings.Split(b.String(), "\n")[1], `"component"`) != 1 {
		t.Errorf("component written more than once: %s", b)
	}
	if r := lines[2]; r["component"] != "other" {
		t.Errorf("ResetNamed line %v, want component other", r)
	}
	if n := wal.Name(); n != "raft.wal" {
		t.Errorf("Name %q", n)
	}
	if a := wal.ImpliedArgs(); len(a) != 2 || a[0] != "segment" {
		t.Errorf("ImpliedArgs %v", a)
	}
}

// With does not let two loggers made from one share their implied args.
func TestRaftLogWithDoesNotAlias(t *testing.T) {
	l, b := jsonLog(slog.LevelInfo, false)
	base := l.With("a", 1, "b", 2)
	x := base.With("x", 1)
	y := base.With("y", 1)
	x.Info("x")
	y.Info("y")
	lines := decodeLines(t, b)
	if _, ok := lines[0]["y"]; ok {
		t.Errorf("x's line has y: %v", lines[0])
	}
	if _, ok := lines[1]["x"]; ok {
		t.Errorf("y's line has x: %v", lines[1])
	}
}

func TestRaftLogSetLevel(t *testing.T) {
	l, b := jsonLog(slog.LevelDebug, false)
	sub := l.Named("wal")
	l.SetLevel(hclog.Warn)
	if l.IsInfo() || sub.IsInfo() || !sub.IsWarn() || l.GetLevel() != hclog.Warn {
		t.Errorf("after SetLevel(Warn): IsInfo %v, sub IsInfo %v, GetLevel %v", l.IsInfo(), sub.IsInfo(), l.GetLevel())
	}
	l.SetLevel(hclog.Off)
	sub.Error("dropped")
	l.SetLevel(hclog.NoLevel)
	l.Debug("kept")
	if lines := decodeLines(t, b); len(lines) != 1 || lines[0]["msg"] != "kept" {
		t.Errorf("lines %v, want only kept", lines)
	}
}

func TestRaftLogStandardLogger(t *testing.T) {
	l, b := jsonLog(slog.LevelDebug, false)
	l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[WARN] careful")
	l.StandardLogger(nil).Print("[WARN] plain")
	l.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("[DEBUG] forced")
	l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true, InferLevelsWithTimestamp: true}).Print("2026/01/02 03:04:05 [DEBUG] stamped")
	var got []string
	for _, m := range decodeLines(t, b) {
		got = append(got, m["level"].(string)+":"+m["msg"].(string))
	}
	want := "WARN:careful INFO:[WARN] plain ERROR:forced DEBUG:stamped"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// Raft logs an unreachable peer's failures about twice a second: one line
// per peer and message per repeatWindow is written, the next one saying how
// many were left out; other peers, other messages and lines below Warn are
// not held back.
func TestRaftLogRepeats(t *testing.T) {
	l, b := jsonLog(slog.LevelDebug, false)
	now := time.Unix(1_000_000, 0)
	l.(*raftLog).rep.now = func() time.Time { return now }
	down := errors.New("dial tcp 127.0.0.1:7001: connect: connection refused")
	beat := func(peer string) {
		l.Error("failed to heartbeat to", "peer", peer, "backoff time", 10*time.Millisecond, "error", down)
	}
	for range 10 {
		beat("127.0.0.1:7001")
		beat("127.0.0.1:7002")
		l.Named("replication").Debug("sending heartbeat", "peer", "127.0.0.1:7001")
		now = now.Add(500 * time.Millisecond)
	}
	l.Warn("failed to heartbeat to", "peer", "127.0.0.1:7001") // another level: its own kind
	now = now.Add(repeatWindow)
	beat("127.0.0.1:7001")

	var heartbeats []map[string]any
	debug := 0
	for _, m := range decodeLines(t, b) {
		switch m["msg"] {
		case "failed to heartbeat to":
			if m["level"] == "ERROR" {
				heartbeats = append(heartbeats, m)
			}
		case "sending heartbeat":
			debug++
		}
	}
	if debug != 10 {
		t.Errorf("%d debug lines, want all 10", debug)
	}
	var peers []string
	for _, m := range heartbeats {
		peers = append(peers, fmt.Sprintf("%v/%v", m["peer"], m["repeated"]))
	}
	if want := []string{"127.0.0.1:7001/<nil>", "127.0.0.1:7002/<nil>", "127.0.0.1:7001/9"}; !slices.Equal(peers, want) {
		t.Errorf("heartbeat errors written %q, want %q", peers, want)
	}
}
