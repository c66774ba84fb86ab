// Package appdb is the bridge between vidfarm and the service's app database
// (PostgreSQL): it owns the tables both sides share, their migrations, and the
// leader-only job that applies what the app writes (accounts, purchases, plan
// changes, API keys and revocations) through FSM commands exactly once, and exports
// every credit movement, video state change and balance back to the app. The FSM
// stays the authority for balances; Postgres being down never stops the API.
package appdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// Node is what the bridge needs of the Raft node.
type Node interface {
	Apply(ctx context.Context, cmd fsm.Command) (any, error)
	IsLeader() bool
	// Barrier waits until the FSM has applied everything committed before it.
	Barrier(ctx context.Context) error
}

// Config wires a bridge.
type Config struct {
	// DSN is the app database, e.g. postgres://vidfarm@db/app?search_path=vidfarm.
	DSN  string
	FSM  *fsm.FSM
	Node Node
	// Poll is how often the bridge looks for work when nothing woke it (default
	// 250 ms); LISTEN/NOTIFY wakes it at once for inbound rows.
	Poll time.Duration
	// Batch is the most rows read, or ledger entries exported, per step (default 500).
	Batch int
	// MaxBackoff caps the wait between attempts while Postgres fails (default 30 s).
	MaxBackoff time.Duration
	// HeldWarnAfter is how long app rows wait behind a transaction still
	// open before the bridge logs a warning naming it (default 10 s).
	HeldWarnAfter time.Duration
	Logger        *slog.Logger
	Now           func() time.Time
}

// Bridge runs the app-database bridge on the leader.
type Bridge struct {
	cfg     Config
	metrics *Metrics

	mu       sync.Mutex
	pool     *pgxpool.Pool
	migrated bool
	st       Status
	// heldWarnedAt is when warnHeld last warned, of the transaction
	// heldWarnedXid.
	heldWarnedAt  time.Time
	heldWarnedXid uint64
}

// Status is what `vidfarm admin cluster status` shows of the bridge.
type Status struct {
	Enabled bool `json:"enabled"`
	// Active is true on the leader, where the bridge runs.
	Active    bool   `json:"active"`
	Connected bool   `json:"connected"`
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt and LastSuccessAt are Unix seconds (0: never).
	LastErrorAt   int64 `json:"last_error_at,omitempty"`
	LastSuccessAt int64 `json:"last_success_at,omitempty"`
	// InboundLagSeconds is the age of the oldest app row not yet applied,
	// held back ones included; OutboundLagSeconds the age of the oldest
	// movement not yet exported.
	InboundLagSeconds  float64 `json:"inbound_lag_seconds"`
	OutboundLagSeconds float64 `json:"outbound_lag_seconds"`
	// InboundHeldRows counts app rows committed but not yet applied because
	// a transaction that began before them is still open (inbound.go).
	InboundHeldRows int64 `json:"inbound_held_rows"`
	// OutboundPending counts ledger entries and video events not yet exported.
	OutboundPending int    `json:"outbound_pending"`
	OutboundCursor  uint64 `json:"outbound_cursor"`
	InboundCursor   string `json:"inbound_cursor"`
	RowsApplied     int64  `json:"rows_applied"`
	RowsQuarantined int64  `json:"rows_quarantined"`
	RowsExported    int64  `json:"rows_exported"`
}

// New checks the configuration; nothing connects until Run.
func New(cfg Config) (*Bridge, error) {
	if cfg.DSN == "" || cfg.FSM == nil || cfg.Node == nil {
		return nil, errors.New("appdb: a DSN, the FSM and the node are required")
	}
	if _, err := pgxpool.ParseConfig(cfg.DSN); err != nil {
		return nil, fmt.Errorf("appdb: app database address: %w", err)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.HeldWarnAfter <= 0 {
		cfg.HeldWarnAfter = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Bridge{cfg: cfg, st: Status{Enabled: true}}
	b.metrics = newMetrics(b)
	return b, nil
}

// Metrics returns the bridge's Prometheus collectors.
func (b *Bridge) Metrics() *Metrics { return b.metrics }

// Status reports where the bridge stands; the outbound lag is read from the FSM,
// so it keeps growing while Postgres is down.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	st := b.st
	b.mu.Unlock()
	st.Active = b.cfg.Node.IsLeader()
	pending, oldest := b.cfg.FSM.ExportBacklog(st.OutboundCursor)
	st.OutboundPending = pending
	st.OutboundLagSeconds = b.age(oldest)
	if !st.Active {
		// The bridge runs on the leader alone: what a former leader last
		// saw of the app database says nothing now, and a stale
		// "connected" would hide the leader's disconnection from an alert
		// on the members' maximum.
		st.Connected, st.InboundLagSeconds, st.InboundHeldRows = false, 0, 0
	}
	return st
}

// age is how long ago the Unix-nanosecond time at was; 0 for none.
func (b *Bridge) age(at int64) float64 {
	if at == 0 {
		return 0
	}
	return max(0, b.cfg.Now().Sub(time.Unix(0, at)).Seconds())
}

// Run works until ctx ends: on the leader it applies and exports, elsewhere it waits.
func (b *Bridge) Run(ctx context.Context) {
	defer b.closePool()
	for ctx.Err() == nil {
		if b.cfg.Node.IsLeader() {
			b.lead(ctx)
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(b.cfg.Poll):
		}
	}
}

// lead runs while this node leads: a step whenever woken or polled, backing off
// while Postgres fails.
func (b *Bridge) lead(ctx context.Context) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A new leader may not have replayed its log yet; the FSM must be current
	// before the bridge reads what is pending.
	if err := b.cfg.Node.Barrier(lctx); err != nil {
		b.cfg.Logger.Debug("app database bridge waits for the FSM to catch up", "err", err)
		select {
		case <-lctx.Done():
		case <-time.After(b.cfg.Poll):
		}
		return
	}
	wake := make(chan struct{}, 1)
	go b.listen(lctx, wake)
	var fails int
	for lctx.Err() == nil && b.cfg.Node.IsLeader() {
		more, err := b.Step(lctx)
		wait := b.cfg.Poll
		switch {
		case err != nil && lctx.Err() == nil:
			fails++
			wait = backoff(fails, b.cfg.MaxBackoff)
			b.failed(err)
			b.cfg.Logger.Warn("app database bridge step failed; retrying", "err", err, "attempt", fails, "retry_in", wait.String())
		case err == nil:
			fails = 0
			if more {
				continue
			}
		}
		select {
		case <-lctx.Done():
		case <-wake:
		case <-time.After(wait):
		}
	}
}

// backoff is the wait after the n-th failure in a row: doubling from 100 ms up to
// limit, with jitter so a fleet does not retry in step.
func backoff(n int, limit time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(n-1, 20)
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}

// Step does one round: make sure export is on, connect and migrate if needed, apply
// one batch of inbound rows and export one batch of movements. more says a batch
// was full, so there may be more waiting. Export goes on before Postgres is
// reached, so movements made while it is down from the start are recorded too.
func (b *Bridge) Step(ctx context.Context) (more bool, err error) {
	if !b.cfg.FSM.AppExport().On {
		if _, err := b.cfg.Node.Apply(ctx, &fsm.SetAppExport{On: true, Now: b.cfg.Now().UnixNano()}); err != nil {
			return false, fmt.Errorf("switch export on: %w", err)
		}
	}
	pool, err := b.connect(ctx)
	if err != nil {
		return false, err
	}
	in, err := b.inbound(ctx, pool)
	if err != nil {
		return false, err
	}
	out, err := b.outbound(ctx, pool)
	if err != nil {
		return false, err
	}
	b.succeeded()
	return in || out, nil
}

func (b *Bridge) connect(ctx context.Context) (*pgxpool.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pool == nil {
		pool, err := pgxpool.New(ctx, b.cfg.DSN)
		if err != nil {
			return nil, fmt.Errorf("connect to the app database: %w", err)
		}
		b.pool = pool
	}
	if !b.migrated {
		if err := Migrate(ctx, b.pool); err != nil {
			return nil, err
		}
		b.migrated = true
	}
	return b.pool, nil
}

func (b *Bridge) closePool() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pool != nil {
		b.pool.Close()
		b.pool = nil
	}
}

func (b *Bridge) failed(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.Connected = false
	b.migrated = false // the database may have been replaced: migrating again is cheap
	b.st.LastError = err.Error()
	b.st.LastErrorAt = b.cfg.Now().Unix()
	b.metrics.errors.Inc()
}

func (b *Bridge) succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.Connected = true
	b.st.LastSuccessAt = b.cfg.Now().Unix()
}

// update changes the status under the lock.
func (b *Bridge) update(f func(st *Status)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.st)
}
