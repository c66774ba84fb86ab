package fsm

// pendingIndex indexes the deliveries waiting for an attempt (which the
// deliveries table keeps in memory) by endpoint. The deliverer asks for due
// deliveries each time a slot frees; an endpoint whose receiver hangs
// gathers a backlog while its one slot is held, and with the index a read
// passes over that endpoint, or a disabled one, in one step instead of
// visiting every delivery it holds. Derived from the deliveries: rebuilt on
// restore, never written.
type pendingIndex struct {
	n      int
	byHook map[string]map[string]struct{} // webhook id -> delivery ids
}

func newPendingIndex() pendingIndex {
	return pendingIndex{byHook: make(map[string]map[string]struct{})}
}

// add indexes d; adding it again changes nothing.
func (p *pendingIndex) add(d *Delivery) {
	ids := p.byHook[d.WebhookID]
	if ids == nil {
		ids = make(map[string]struct{})
		p.byHook[d.WebhookID] = ids
	}
	id := d.ID()
	if _, ok := ids[id]; !ok {
		ids[id] = struct{}{}
		p.n++
	}
}

func (p *pendingIndex) remove(d *Delivery) {
	ids := p.byHook[d.WebhookID]
	id := d.ID()
	if _, ok := ids[id]; !ok {
		return
	}
	delete(ids, id)
	p.n--
	if len(ids) == 0 {
		delete(p.byHook, d.WebhookID)
	}
}

func (p *pendingIndex) len() int { return p.n }
