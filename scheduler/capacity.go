package scheduler

// Capacity: what a node's hardware can run at all (staticFit, which
// indexes nodes by requirement class), what fits its free capacity now
// (fits, freeView), and which GPUs a lease gets (takeGPUs: best fit).

// capEntry is one class a node's hardware can run, with what placement
// needs to test it without leaving the node's own array.
type capEntry struct {
	ci   int32  // class index
	cpu  uint16 // Requirements.Validate bounds CPU slots to 1024
	gpus uint8  // and GPUs to 64
	warm bool   // the class's model is warm on the node
	mem  float64
}

func (n *node) capEntry(c *class) capEntry {
	return capEntry{
		ci:   int32(c.idx),
		gpus: uint8(c.req.GPUs),
		cpu:  uint16(c.req.CPUSlots),
		warm: c.req.Model != "" && n.warm[c.req.Model],
		mem:  c.req.GPUMemoryGB,
	}
}

// freeView summarizes a node's free capacity for one placement, so that
// testing a class is O(1).
type freeView struct {
	cpu    int
	maxAny float64   // most memory on a free GPU or MIG slice; -1 if none
	whole  []float64 // memory of free whole GPUs, largest first
}

// view fills n.free from n's current allocation.
func (n *node) view() *freeView {
	f := &n.free
	f.cpu = n.freeCPU()
	f.maxAny = -1
	f.whole = f.whole[:0]
	for i := len(n.gpus) - 1; i >= 0; i-- { // n.gpus is sorted by memory, ascending
		g := &n.gpus[i]
		if g.busy != nil {
			continue
		}
		f.maxAny = max(f.maxAny, g.memGB)
		if !g.mig {
			f.whole = append(f.whole, g.memGB)
		}
	}
	return f
}

func (f *freeView) empty() bool { return f.cpu == 0 && f.maxAny < 0 }

// fits reports whether the class of ce fits the free capacity, in O(1).
func (f *freeView) fits(ce *capEntry) bool {
	switch {
	case int(ce.cpu) > f.cpu:
		return false
	case ce.gpus == 0:
		return true
	case ce.gpus == 1:
		return ce.mem <= f.maxAny
	}
	return int(ce.gpus) <= len(f.whole) && f.whole[ce.gpus-1] >= ce.mem
}

func (g *gpuSlot) eligible(r *Requirements) bool {
	return g.memGB >= r.GPUMemoryGB && (!g.mig || r.GPUs <= 1)
}

// staticFit reports whether n's hardware and software could run r when idle.
func (n *node) staticFit(r *Requirements) bool {
	if r.Model != "" && !n.models[r.Model] {
		return false
	}
	for _, t := range r.Tools {
		if !n.tools[t] {
			return false
		}
	}
	if r.CPUSlots > n.spec.CPUSlots {
		return false
	}
	if r.GPUs == 0 {
		return true
	}
	count := 0
	for i := range n.gpus {
		g := &n.gpus[i]
		if g.eligible(r) {
			count++
		}
	}
	return count >= r.GPUs
}

// takeGPUs marks the smallest idle GPUs that satisfy t's requirements
// busy with t (best fit), so large GPUs stay free for large tasks, and
// appends their ids to ids. t must fit.
func (n *node) takeGPUs(t *task, ids []string) []string {
	r := &t.cls.req
	taken := 0
	for i := range n.gpus {
		if taken == r.GPUs {
			break
		}
		g := &n.gpus[i]
		if g.busy == nil && g.eligible(r) {
			g.busy = t
			ids = append(ids, g.id)
			taken++
		}
	}
	return ids
}

func (n *node) gpu(id string) *gpuSlot {
	for i := range n.gpus {
		g := &n.gpus[i]
		if g.id == id {
			return g
		}
	}
	return nil
}

func (n *node) idleGPUs() int {
	c := 0
	for i := range n.gpus {
		g := &n.gpus[i]
		if g.busy == nil {
			c++
		}
	}
	return c
}
