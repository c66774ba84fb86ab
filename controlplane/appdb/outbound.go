package appdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func readOutboundCursor(ctx context.Context, q pgxQuerier) (uint64, error) {
	var idx int64
	if err := q.QueryRow(ctx, `SELECT fsm_index FROM vidfarm_bridge_cursor WHERE name = 'outbound'`).Scan(&idx); err != nil {
		return 0, fmt.Errorf("read outbound cursor: %w", err)
	}
	return uint64(idx), nil
}

// outbound exports the next batch of movements and events, then lets the FSM
// forget what Postgres has committed.
func (b *Bridge) outbound(ctx context.Context, pool *pgxpool.Pool) (more bool, err error) {
	cursor, err := readOutboundCursor(ctx, pool)
	if err != nil {
		return false, err
	}
	ob := b.cfg.FSM.PendingExport(cursor, b.cfg.Batch)
	if n := len(ob.Ledger) + len(ob.Events); n > 0 {
		if err := export(ctx, pool, ob); err != nil {
			return false, err
		}
		cursor = ob.Through
		b.metrics.exported.Add(float64(n))
		b.update(func(st *Status) { st.RowsExported += int64(n) })
		more = len(ob.Ledger) >= b.cfg.Batch || len(ob.Events) >= b.cfg.Batch
	}
	b.update(func(st *Status) { st.OutboundCursor = cursor })
	if first := b.cfg.FSM.AppExport().FirstHeld; first != 0 && first <= cursor {
		if _, err := b.cfg.Node.Apply(ctx, &fsm.TrimExported{Through: cursor}); err != nil {
			return false, fmt.Errorf("trim exported entries: %w", err)
		}
	}
	return more, nil
}

// export writes one outbox and moves the cursor past it in one transaction. Every
// write is keyed by FSM index, so writing the same outbox twice changes nothing.
func export(ctx context.Context, pool *pgxpool.Pool, ob fsm.Outbox) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := exportLedger(ctx, tx, ob.Ledger); err != nil {
			return err
		}
		if err := exportEvents(ctx, tx, ob.Events); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE vidfarm_bridge_cursor SET fsm_index = GREATEST(fsm_index, $1), updated_at = now()
			WHERE name = 'outbound'`, int64(ob.Through))
		return err
	})
	if err != nil {
		return fmt.Errorf("export through index %d: %w", ob.Through, err)
	}
	return nil
}

func exportLedger(ctx context.Context, tx pgx.Tx, es []fsm.LedgerEntry) error {
	if len(es) == 0 {
		return nil
	}
	n := len(es)
	idx, seq, amount, balance := make([]int64, n), make([]int32, n), make([]int64, n), make([]int64, n)
	acct, kind, video, ref := make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
	at := make([]time.Time, n)
	for i, e := range es {
		idx[i], seq[i], amount[i], balance[i] = int64(e.Index), int32(e.Seq), e.Amount, e.Balance
		acct[i], kind[i], video[i], ref[i], at[i] = e.AccountID, e.Kind, orNull(e.VideoID), orNull(e.Ref), time.Unix(0, e.At)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO vidfarm_ledger (fsm_index, seq, account_id, kind, amount, balance, video_id, ref, at)
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::timestamptz[])
		ON CONFLICT (fsm_index, seq) DO NOTHING`, idx, seq, acct, kind, amount, balance, video, ref, at); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	// The balance after an account's last movement in this batch.
	if _, err := tx.Exec(ctx, `INSERT INTO vidfarm_balances (account_id, credits, updated_at, fsm_index, fsm_seq)
		SELECT DISTINCT ON (a) a, b, t, i, s FROM unnest($1::text[], $2::bigint[], $3::timestamptz[], $4::bigint[], $5::int[]) AS u(a, b, t, i, s)
		ORDER BY a, i DESC, s DESC
		ON CONFLICT (account_id) DO UPDATE SET credits = excluded.credits, updated_at = excluded.updated_at,
			fsm_index = excluded.fsm_index, fsm_seq = excluded.fsm_seq
		WHERE (vidfarm_balances.fsm_index, vidfarm_balances.fsm_seq) < (excluded.fsm_index, excluded.fsm_seq)`,
		acct, balance, at, idx, seq); err != nil {
		return fmt.Errorf("write balances: %w", err)
	}
	return nil
}

func exportEvents(ctx context.Context, tx pgx.Tx, es []fsm.VideoEvent) error {
	if len(es) == 0 {
		return nil
	}
	n := len(es)
	idx, seq, charged := make([]int64, n), make([]int32, n), make([]int64, n)
	video, acct, status, mode := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	model, errText := make([]*string, n), make([]*string, n)
	refunded, at := make([]bool, n), make([]time.Time, n)
	for i, e := range es {
		idx[i], seq[i], charged[i] = int64(e.Index), int32(e.Seq), e.Charged
		video[i], acct[i], status[i], mode[i] = e.VideoID, e.AccountID, e.Status, e.Mode
		model[i], errText[i], refunded[i], at[i] = orNull(e.Model), orNull(e.Error), e.Refunded, time.Unix(0, e.At)
	}
	args := []any{idx, seq, video, acct, status, mode, model, charged, refunded, errText, at}
	const rows = `unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bool[], $10::text[], $11::timestamptz[])`
	if _, err := tx.Exec(ctx, `INSERT INTO vidfarm_video_events (fsm_index, seq, video_id, account_id, status, mode, model, credits_charged, refunded, error, at)
		SELECT * FROM `+rows+` ON CONFLICT (fsm_index, seq) DO NOTHING`, args...); err != nil {
		return fmt.Errorf("write video events: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO vidfarm_videos (video_id, account_id, status, mode, model, credits_charged, refunded, error, updated_at, fsm_index, fsm_seq)
		SELECT DISTINCT ON (v) v, a, st, m, mo, c, r, e, t, i, s FROM `+rows+` AS u(i, s, v, a, st, m, mo, c, r, e, t)
		ORDER BY v, i DESC, s DESC
		ON CONFLICT (video_id) DO UPDATE SET status = excluded.status, model = excluded.model, credits_charged = excluded.credits_charged,
			refunded = excluded.refunded, error = excluded.error, updated_at = excluded.updated_at, fsm_index = excluded.fsm_index, fsm_seq = excluded.fsm_seq
		WHERE (vidfarm_videos.fsm_index, vidfarm_videos.fsm_seq) < (excluded.fsm_index, excluded.fsm_seq)`, args...); err != nil {
		return fmt.Errorf("write videos: %w", err)
	}
	return nil
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
