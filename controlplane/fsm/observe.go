package fsm

import (
	"io"
	"time"
)

// Observer receives what the FSM measures of itself, for metrics: how long
// each command took to apply and what each snapshot cost. The FSM keeps no
// dependency on a metrics library; the server turns these calls into
// Prometheus series.
//
// Measuring reads the clock, which Apply otherwise never does: the durations
// go only to the observer and never into the state, so replicas stay
// identical whatever their clocks say.
type Observer struct {
	// Applied is called after every command, under the FSM's lock: it must
	// be quick and must not read the FSM.
	Applied func(t MessageType, d time.Duration)
	// Snapshot is called once a snapshot's phase ends: "copy" (under the read
	// lock, the part that holds up applies) or "persist" (streaming to the
	// sink while applies go on, with the bytes written).
	Snapshot func(phase string, d time.Duration, bytes int64)
	// Written is called after each checkpoint with the pages its
	// transaction wrote to the state file: every page it changed, written
	// whole, and the free list. Records that land all over a bucket cost a
	// page each; records appended share them.
	Written func(pages int64)
}

// SetObserver installs o; call it before the node starts.
func (f *FSM) SetObserver(o Observer) {
	f.mu.Lock()
	f.obs = o
	f.mu.Unlock()
}

func (o Observer) applied(t MessageType, since time.Time) {
	if o.Applied != nil {
		o.Applied(t, time.Since(since))
	}
}

func (o Observer) snapshot(phase string, since time.Time, bytes int64) {
	if o.Snapshot != nil {
		o.Snapshot(phase, time.Since(since), bytes)
	}
}

func (o Observer) written(pages int64) {
	if o.Written != nil {
		o.Written(pages)
	}
}

// countingWriter counts the bytes a snapshot writes to its sink.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
