package raftnode

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Raft's own log lines. hashicorp/raft, its network transport, its file
// snapshot store and raft-wal log through an hclog.Logger; newRaftLog gives
// them one that writes through the server's slog handler, so that their lines
// have the server's shape (time, level, msg), pass the same --log-level filter
// and go where the server's lines go. Each carries "component" with hclog's
// logger name: "raft" for the Raft library (consensus, transport, snapshot
// store), "raft.wal" for the log store. It is the one key hclog's @module was,
// so a filter on Raft's lines is component=="raft" or a prefix match on
// "raft" for the log store's too. Raft's own keys ("last-leader-id",
// "error", …) are kept as Raft writes them, so that a line can still be found
// in Raft's source.
//
// There is no maintained adapter in this direction (hclog's hclogslog goes
// the other way, a slog.Handler over an hclog.Logger), hence this one.

// raftComponentKey is the slog key naming the hclog logger a line came from.
const raftComponentKey = "component"

// slogLevelTrace is where hclog's Trace goes: below slog's Debug, as slog's
// documentation suggests for finer levels, so --log-level debug (the lowest
// the server takes) leaves it out.
const slogLevelTrace = slog.LevelDebug - 4

// raftLog is an hclog.Logger over a slog.Handler.
type raftLog struct {
	base    slog.Handler // the server's handler, nothing added
	h       slog.Handler // base with the component and the implied args
	name    string
	implied []any
	// floor is a further minimum set by SetLevel (hclog.NoLevel: none),
	// shared with the loggers made from this one as hclog does.
	floor *atomic.Int32
	rep   *repeats // shared too: which warnings and errors are written
}

var _ hclog.Logger = (*raftLog)(nil)

// newRaftLog is the logger Raft and its stores get: l's handler, named "raft".
func newRaftLog(l *slog.Logger) hclog.Logger {
	return newRaftLogFrom(l.Handler(), "raft", nil, new(atomic.Int32), newRepeats())
}

func newRaftLogFrom(base slog.Handler, name string, implied []any, floor *atomic.Int32, rep *repeats) *raftLog {
	attrs := append([]slog.Attr{slog.String(raftComponentKey, name)}, hclogAttrs(implied)...)
	return &raftLog{base: base, h: base.WithAttrs(attrs), name: name, implied: implied, floor: floor, rep: rep}
}

// slogLevel maps an hclog level to slog's; false for Off, which logs nothing.
func slogLevel(l hclog.Level) (slog.Level, bool) {
	switch l {
	case hclog.Trace:
		return slogLevelTrace, true
	case hclog.Debug:
		return slog.LevelDebug, true
	case hclog.NoLevel, hclog.Info:
		return slog.LevelInfo, true
	case hclog.Warn:
		return slog.LevelWarn, true
	case hclog.Error:
		return slog.LevelError, true
	}
	return 0, false
}

// enabled answers from the handler, so Raft does not build lines that would
// be dropped.
func (l *raftLog) enabled(level hclog.Level) bool {
	sl, ok := slogLevel(level)
	if !ok {
		return false
	}
	if f := hclog.Level(l.floor.Load()); f != hclog.NoLevel && level < f {
		return false
	}
	return l.h.Enabled(context.Background(), sl)
}

// log writes one line; every exported method calls it directly, so the
// caller's frame is at the same depth for AddSource.
func (l *raftLog) log(level hclog.Level, msg string, args []any) {
	if !l.enabled(level) {
		return
	}
	skipped := 0
	if level >= hclog.Warn { // see repeatWindow
		ok, n := l.rep.admit(repeatKey(l.name, level, msg, l.implied, args))
		if !ok {
			return
		}
		skipped = n
	}
	sl, _ := slogLevel(level)
	var pcs [1]uintptr
	runtime.Callers(3, pcs[:]) // runtime.Callers, log, the exported method
	r := slog.NewRecord(time.Now(), sl, msg, pcs[0])
	r.AddAttrs(hclogAttrs(args)...)
	if skipped > 0 {
		r.AddAttrs(slog.Int("repeated", skipped))
	}
	_ = l.h.Handle(context.Background(), r)
}

// hclogAttrs turns hclog's alternating keys and values into attributes the
// way hclog's JSON format does: a lone last value is EXTRA_VALUE_AT_END (a
// captured stack trace is "stacktrace"), a key that is not a string is
// printed, an hclog.Format is formatted.
func hclogAttrs(args []any) []slog.Attr {
	if len(args) == 0 {
		return nil
	}
	attrs := make([]slog.Attr, 0, len(args)/2+1)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			if st, ok := args[i].(hclog.CapturedStacktrace); ok {
				attrs = append(attrs, slog.String("stacktrace", string(st)))
			} else {
				attrs = append(attrs, slog.Any(hclog.MissingKey, args[i]))
			}
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		attrs = append(attrs, slog.Any(key, hclogValue(args[i+1])))
	}
	return attrs
}

// hclogValue is v as the line shows it: an hclog.Format formatted; a value
// slog would marshal as JSON but that says what it is with String (Raft
// passes itself, "Node at 127.0.0.1:7000 [Leader]", and net.Addrs) as that
// string, where hclog's JSON wrote {}. Numbers, durations, times and errors
// are left to slog, as in the server's own lines.
func hclogValue(v any) any {
	switch x := v.(type) {
	case hclog.Format:
		if len(x) > 0 {
			if s, ok := x[0].(string); ok {
				return fmt.Sprintf(s, x[1:]...)
			}
		}
		return fmt.Sprint(x...)
	case error, json.Marshaler, encoding.TextMarshaler:
		return v
	case fmt.Stringer:
		if slog.AnyValue(v).Kind() == slog.KindAny {
			return x.String()
		}
	}
	return v
}

func (l *raftLog) Log(level hclog.Level, msg string, args ...any) { l.log(level, msg, args) }
func (l *raftLog) Trace(msg string, args ...any)                  { l.log(hclog.Trace, msg, args) }
func (l *raftLog) Debug(msg string, args ...any)                  { l.log(hclog.Debug, msg, args) }
func (l *raftLog) Info(msg string, args ...any)                   { l.log(hclog.Info, msg, args) }
func (l *raftLog) Warn(msg string, args ...any)                   { l.log(hclog.Warn, msg, args) }
func (l *raftLog) Error(msg string, args ...any)                  { l.log(hclog.Error, msg, args) }

func (l *raftLog) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *raftLog) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *raftLog) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *raftLog) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *raftLog) IsError() bool { return l.enabled(hclog.Error) }

func (l *raftLog) ImpliedArgs() []any { return l.implied }

// With adds args to every line of the logger it returns.
func (l *raftLog) With(args ...any) hclog.Logger {
	implied := append(l.implied[:len(l.implied):len(l.implied)], args...)
	return newRaftLogFrom(l.base, l.name, implied, l.floor, l.rep)
}

func (l *raftLog) Name() string { return l.name }

// Named appends name to the logger's, with a dot, as hclog does.
func (l *raftLog) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return newRaftLogFrom(l.base, name, l.implied, l.floor, l.rep)
}

func (l *raftLog) ResetNamed(name string) hclog.Logger {
	return newRaftLogFrom(l.base, name, l.implied, l.floor, l.rep)
}

// SetLevel raises the minimum of this logger and those made from it above
// the handler's; it cannot lower it below the handler's (--log-level).
// hclog.NoLevel removes it.
func (l *raftLog) SetLevel(level hclog.Level) { l.floor.Store(int32(level)) }

// GetLevel is the lowest level that is written, hclog.Off if none is.
func (l *raftLog) GetLevel() hclog.Level {
	for _, level := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if l.enabled(level) {
			return level
		}
	}
	return hclog.Off
}

func (l *raftLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter writes each Write as one line, at Info or at the level its
// "[WARN]"-style prefix names when opts asks for that, as hclog's does.
func (l *raftLog) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &raftLogWriter{l: l, opts: *opts}
}

type raftLogWriter struct {
	l    *raftLog
	opts hclog.StandardLoggerOptions
}

func (w *raftLogWriter) Write(p []byte) (int, error) {
	s := string(bytes.TrimRight(p, " \t\n"))
	level := hclog.Info
	switch {
	case w.opts.ForceLevel != hclog.NoLevel:
		_, s = pickLevel(s)
		level = w.opts.ForceLevel
	case w.opts.InferLevels:
		if w.opts.InferLevelsWithTimestamp {
			s = strings.TrimLeft(s, "0123456789 :/.+-TZ")
		}
		level, s = pickLevel(s)
	}
	w.l.Log(level, s)
	return len(p), nil
}

// pickLevel reads a "[LEVEL]" prefix off s.
func pickLevel(s string) (hclog.Level, string) {
	for _, p := range []struct {
		prefix string
		level  hclog.Level
	}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info}, {"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}, {"[ERR]", hclog.Error}} {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			return p.level, strings.TrimSpace(rest)
		}
	}
	return hclog.Info, s
}
