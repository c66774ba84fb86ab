package scheduler

// class is a requirement class: every task with the same normalized
// requirements. Classes are few (models x resolutions + the CPU stages), so
// a node's placement looks at classes, never at individual tasks.
type class struct {
	idx int
	key string
	req Requirements
	// capable counts live (not down, not draining) nodes whose hardware
	// could run this class when idle.
	capable int
}

// countCapable adds delta to the capable count of every class n can run,
// if n is live.
func (s *State) countCapable(n *node, delta int) {
	if !n.live() {
		return
	}
	for _, ce := range n.capList {
		s.classes[ce.ci].capable += delta
	}
}

// classFor returns the class of normalized requirements r, creating it and
// indexing every node against it if it is new.
func (s *State) classFor(r Requirements) *class {
	key := r.key()
	if c, ok := s.classByKey[key]; ok {
		return c
	}
	c := &class{idx: len(s.classes), key: key, req: r}
	s.classes = append(s.classes, c)
	s.classByKey[key] = c
	for _, n := range s.nodes { // order-independent: each node is updated on its own
		if n.staticFit(&c.req) {
			n.capList = append(n.capList, n.capEntry(c))
			if n.live() {
				c.capable++
			}
		}
	}
	return c
}
