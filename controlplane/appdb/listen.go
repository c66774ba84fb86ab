package appdb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyChannel is where the inbound tables' triggers announce new rows.
const notifyChannel = "vidfarm_inbound"

// listenBackoff caps the wait between LISTEN connection attempts: lower than
// the bridge's MaxBackoff, since a LISTEN that connects again is how the bridge
// learns that the database is back (it wakes the step loop out of its backoff).
const listenBackoff = 5 * time.Second

// listen holds a connection LISTENing on the inbound channel and wakes the bridge
// on every notification, reconnecting with backoff. Polling covers the gaps.
func (b *Bridge) listen(ctx context.Context, wake chan<- struct{}) {
	for fails := 0; ctx.Err() == nil; {
		listened, err := b.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		if listened {
			fails = 0 // a connection that worked and then broke: start the backoff over
		}
		fails++
		b.cfg.Logger.Debug("app database LISTEN connection lost; polling meanwhile", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff(fails, min(b.cfg.MaxBackoff, listenBackoff))):
		}
	}
}

// listenOnce connects, LISTENs and wakes the bridge once at once (the
// database answers again: a step backing off after failures need not wait
// out its backoff) and then on every notification. listened says LISTEN
// worked.
func (b *Bridge) listenOnce(ctx context.Context, wake chan<- struct{}) (listened bool, err error) {
	conn, err := pgx.Connect(ctx, b.cfg.DSN)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return false, err
	}
	for {
		select {
		case wake <- struct{}{}:
		default:
		}
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return true, err
		}
	}
}
