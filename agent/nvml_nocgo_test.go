//go:build !cgo

package agent

import "testing"

// TestDiscoverSystemNoCgo: without cgo there is no NVML, only a CPU node.
func TestDiscoverSystemNoCgo(t *testing.T) {
	c, err := DiscoverSystem()
	if err != nil {
		t.Errorf("error = %v", err)
	}
	if c.NvidiaDriver || c.Note != noteNoCgo || c.GPUs == nil || len(c.GPUs) != 0 {
		t.Errorf("capacity = %+v, want a CPU node with the no-cgo note", c)
	}
}
