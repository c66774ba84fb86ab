package scheduler

import (
	"testing"
	"unsafe"
)

// TestTaskLayout holds the queued task to its size: every garbage
// collection marks the whole queue, and an auto video's three tasks are one
// allocation (PrepareSubmit's slab). An object of over 512 bytes that holds
// pointers carries an 8-byte header, so three tasks take Go's 640-byte size
// class while a task is at most 210 bytes (1,024 at 312 as it was). What
// only a failed task has goes to taskHistory, what only a leased one has to
// its lease, and what can be read from elsewhere (the name from the id,
// whether it awaits scenes from its video) is read there rather than kept
// in task. A task that succeeds must not allocate a history: the
// simulator completes millions (BenchmarkSimWeek1000GPUs).
func TestTaskLayout(t *testing.T) {
	const header = 8
	if got := unsafe.Sizeof(task{}); 3*got+header > 640 {
		t.Fatalf("task is %d bytes: three no longer fit the 640-byte size class", got)
	}
}
