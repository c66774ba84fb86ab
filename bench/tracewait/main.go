// Command tracewait reads an execution trace of a vidfarm server under create
// load (scripts/profile-create.sh takes one) and says where the time of the
// goroutines that matter went: the HTTP handlers, the FSM's apply goroutine
// (raft's runFSM), Raft's leader loop and the snapshot goroutine, each split
// into running, runnable (ready but waiting for a thread) and waiting, by
// what it waited on. Then the distributions that tell a create's latency
// apart: the leader loop's syscalls (the log's writes and fsyncs), the FSM's
// busy stretches (one batch each, from its wake to its next wait), a
// handler's wait for its Raft future, and that wait cut where the FSM began
// the batch that answered it.
//
// It is its own module, as bench/etcdgrpc is, so that the main module does
// not depend on golang.org/x/exp.
//
//	go run ./bench/tracewait trace.out    (from bench/tracewait: go run . FILE)
package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// The goroutine classes, named by a frame of the stack they were first seen with.
const (
	classHTTP      = "http handlers"
	classFSM       = "FSM apply (runFSM)"
	classLeader    = "raft loop (leaderLoop)"
	classSnapshots = "snapshots (runSnapshots)"
	classGC        = "gc workers"
)

func classify(st trace.Stack) string {
	for fr := range st.Frames() {
		switch fn := fr.Func; {
		case strings.Contains(fn, "raft.(*Raft).runFSM"):
			return classFSM
		case strings.Contains(fn, "raft.(*Raft).runSnapshots"):
			return classSnapshots
		case strings.Contains(fn, "raft.(*Raft).run"):
			return classLeader
		case strings.Contains(fn, "net/http.(*conn).serve"):
			return classHTTP
		case strings.Contains(fn, "gcBgMarkWorker"):
			return classGC
		}
	}
	return ""
}

// where names a wait by its kind and the first two frames outside the runtime.
func where(reason string, st trace.Stack) string {
	n := 0
	for fr := range st.Frames() {
		if strings.HasPrefix(fr.Func, "runtime.") || strings.HasPrefix(fr.Func, "sync.") || strings.HasPrefix(fr.Func, "internal/") {
			continue
		}
		reason += " @ " + fr.Func
		if n++; n == 2 {
			break
		}
	}
	return reason
}

type goro struct {
	class  string
	state  trace.GoState
	since  trace.Time
	reason string
}

type totals struct {
	running, runnable, waiting time.Duration
	waits                      map[string]time.Duration
}

type span struct{ from, to trace.Time }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tracewait TRACE")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracewait:", err)
		os.Exit(1)
	}
}

func run(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	gs := map[trace.GoID]*goro{}
	tot := map[string]*totals{}
	var first, last trace.Time
	var syscalls, batches, futures []time.Duration
	var fsmBatches, futureWaits []span
	var batchStart trace.Time
	var busy time.Duration
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		g := gs[st.Resource.Goroutine()]
		if g == nil {
			g = &goro{state: from, since: ev.Time()}
			gs[st.Resource.Goroutine()] = g
		}
		// The transition's own stack is the goroutine's; ev.Stack() is
		// whoever caused it (the FSM waking a handler, say).
		if g.class == "" && st.Stack != trace.NoStack {
			g.class = classify(st.Stack)
		}
		d := time.Duration(ev.Time() - g.since)
		if g.class != "" {
			t := tot[g.class]
			if t == nil {
				t = &totals{waits: map[string]time.Duration{}}
				tot[g.class] = t
			}
			switch g.state {
			case trace.GoRunning:
				t.running += d
			case trace.GoRunnable:
				t.runnable += d
			case trace.GoSyscall:
				t.waiting += d
				t.waits["syscall"] += d
			case trace.GoWaiting:
				t.waiting += d
				t.waits[g.reason] += d
			}
		}
		switch {
		case g.class == classLeader && g.state == trace.GoSyscall:
			syscalls = append(syscalls, d)
		case g.class == classFSM && g.state == trace.GoWaiting && strings.Contains(g.reason, "runFSM"):
			// The FSM waited for its next batch: the stretch since is a batch.
			batchStart = ev.Time()
		case g.class == classFSM:
			busy += d
		case g.class == classHTTP && g.state == trace.GoWaiting && strings.Contains(g.reason, "deferError"):
			futures = append(futures, d)
			futureWaits = append(futureWaits, span{g.since, ev.Time()})
		}
		if g.class == classFSM && to == trace.GoWaiting && st.Stack != trace.NoStack && strings.Contains(where("", st.Stack), "runFSM") && busy > 0 {
			batches = append(batches, busy)
			fsmBatches = append(fsmBatches, span{batchStart, ev.Time()})
			busy = 0
		}
		g.state, g.since = to, ev.Time()
		if to == trace.GoWaiting {
			g.reason = where(st.Reason, st.Stack)
		}
	}
	fmt.Fprintf(w, "trace of %v\n\n", time.Duration(last-first).Round(time.Millisecond))
	for _, c := range []string{classHTTP, classFSM, classLeader, classSnapshots, classGC} {
		t := tot[c]
		if t == nil {
			continue
		}
		fmt.Fprintf(w, "%-26s running %8v  runnable %8v  waiting %8v\n", c, t.running.Round(time.Millisecond),
			t.runnable.Round(time.Millisecond), t.waiting.Round(time.Millisecond))
		if c == classGC {
			continue
		}
		type kv struct {
			k string
			v time.Duration
		}
		var ws []kv
		for k, v := range t.waits {
			ws = append(ws, kv{k, v})
		}
		slices.SortFunc(ws, func(a, b kv) int { return cmp.Compare(b.v, a.v) })
		for i, x := range ws {
			if i == 5 || x.v < time.Millisecond {
				break
			}
			fmt.Fprintf(w, "    waiting %9v  %s\n", x.v.Round(time.Millisecond), x.k)
		}
	}
	// Each future wait, cut where the FSM batch that answered it began.
	var before, inside []time.Duration
	for _, fw := range futureWaits {
		i, _ := slices.BinarySearchFunc(fsmBatches, fw.to, func(b span, t trace.Time) int { return cmp.Compare(b.to, t) })
		if i == len(fsmBatches) || fsmBatches[i].from > fw.to {
			continue
		}
		start := max(fsmBatches[i].from, fw.from)
		before = append(before, time.Duration(start-fw.from))
		inside = append(inside, time.Duration(fw.to-start))
	}
	fmt.Fprintln(w)
	for _, l := range []struct {
		name string
		d    []time.Duration
	}{
		{"raft loop syscalls (log writes, fsyncs)", syscalls},
		{"FSM busy stretches (a batch each)", batches},
		{"handler waits for its Raft future", futures},
		{"  of which before its FSM batch began", before},
		{"  of which inside its FSM batch", inside},
	} {
		if len(l.d) == 0 {
			continue
		}
		slices.Sort(l.d)
		var sum time.Duration
		for _, x := range l.d {
			sum += x
		}
		fmt.Fprintf(w, "%-42s n %6d  p50 %9v  p90 %9v  mean %9v\n", l.name, len(l.d),
			l.d[len(l.d)/2].Round(time.Microsecond), l.d[len(l.d)*9/10].Round(time.Microsecond),
			(sum / time.Duration(len(l.d))).Round(time.Microsecond))
	}
	return nil
}
