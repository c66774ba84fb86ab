package pipeline

import (
	"context"
	"slices"
	"sync"
	"time"
)

// recordWaits replaces the waits between attempts: it records them and
// returns at once.
type recordWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recordWaits) wait(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return nil
}

func (r *recordWaits) got() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits)
}
