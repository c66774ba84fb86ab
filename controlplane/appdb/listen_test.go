package appdb

import (
	"context"
	"testing"
	"time"
)

// The LISTEN connection wakes the bridge as soon as it connects: after an
// outage that is how a step loop backing off learns the database is back,
// instead of waiting out up to MaxBackoff with rows queued.
func TestListenWakesTheBridgeOnConnect(t *testing.T) {
	dsn := NewTestDB(t)
	n, f := testNode(t)
	b := testBridge(t, dsn, n, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() { defer close(done); b.listen(ctx, wake) }()
	select {
	case <-wake:
	case <-time.After(20 * time.Second):
		t.Fatal("no wake-up from a LISTEN connection that connected, without a notification")
	}
	cancel()
	<-done
}
