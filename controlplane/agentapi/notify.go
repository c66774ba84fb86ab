package agentapi

import "sync"

// Notifier wakes the lease long-polls waiting on this node when work may have
// become placeable: a video was queued, a task completed or failed, leases
// expired, a node came or went. It only says "look again": a woken poll proposes
// a lease and may still find nothing. Poll retries once a second anyway, so a
// missed Notify (one on another control-plane node, say) costs at most that.
//
// The zero value is ready to use; Notify is cheap and never blocks.
type Notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewNotifier returns a Notifier.
func NewNotifier() *Notifier { return &Notifier{} }

// Changed returns a channel closed by the next Notify. Take it before looking at
// the state, so a change between the look and the wait is not missed.
func (n *Notifier) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// Notify wakes every waiter.
func (n *Notifier) Notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
