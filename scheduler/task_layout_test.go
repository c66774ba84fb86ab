package scheduler

import (
	"testing"
	"unsafe"
)

// TestTaskLayout holds the queued task to its size: every garbage
// collection marks the whole queue, and an auto video's three tasks are one
// allocation (PrepareSubmit's slab), 640 bytes while a task is at most 213
// (Go's size classes: 704 at 216, 1,024 at 312 as it was). Rarely used
// fields go to taskHistory or the lease rather than into task.
func TestTaskLayout(t *testing.T) {
	if got := unsafe.Sizeof(task{}); 3*got > 640 {
		t.Fatalf("task is %d bytes: three no longer fit the 640-byte size class", got)
	}
}
