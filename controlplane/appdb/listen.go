package appdb

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyChannel is where the inbound tables' triggers announce new rows.
const notifyChannel = "vidfarm_inbound"

// listen holds a connection LISTENing on the inbound channel and wakes the bridge
// on every notification, reconnecting with backoff. Polling covers the gaps.
func (b *Bridge) listen(ctx context.Context, wake chan<- struct{}) {
	for fails := 0; ctx.Err() == nil; {
		err := b.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		fails++
		b.cfg.Logger.Debug("app database LISTEN connection lost; polling meanwhile", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff(fails, b.cfg.MaxBackoff)):
		}
	}
}

func (b *Bridge) listenOnce(ctx context.Context, wake chan<- struct{}) error {
	conn, err := pgx.Connect(ctx, b.cfg.DSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}
