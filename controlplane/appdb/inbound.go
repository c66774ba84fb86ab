package appdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// inboundTables maps each inbound table to the FSM's name for it and the columns
// it fills of the common row shape (NULL for the rest).
var inboundTables = []struct{ table, kind, cols string }{
	{"vidfarm_app_accounts", fsm.AppAccounts, "account_id, name, plan, credits, NULL::text, NULL::text, NULL::bytea, NULL::text"},
	{"vidfarm_app_purchases", fsm.AppPurchases, "account_id, NULL::text, NULL::text, credits, purchase_id, NULL::text, NULL::bytea, NULL::text"},
	{"vidfarm_app_plan_changes", fsm.AppPlanChanges, "account_id, NULL::text, plan, NULL::bigint, NULL::text, NULL::text, NULL::bytea, NULL::text"},
	{"vidfarm_app_api_keys", fsm.AppKeys, "account_id, NULL::text, NULL::text, NULL::bigint, NULL::text, key_id, key_hash, key_hint"},
	{"vidfarm_app_api_key_revocations", fsm.AppKeyRevocations, "NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::text, key_id, NULL::bytea, NULL::text"},
}

// horizonQuery is the xid below which every row the inbound tables will ever
// hold is visible now: the oldest transaction still open, or the next xid when
// none is. Rows are read in (xid, id) order only below it: a transaction still
// running may hold rows that sort before later ones, and reading past those
// would skip them for good. A transaction open in another database of the
// server cannot write these tables, so it is not waited for; pg_stat_activity
// says which database a running transaction is in (datname and backend_xid
// are shown to every role), and one it does not show, such as a prepared
// transaction, is waited for. A transaction is only dropped from the wait
// when pg_stat_activity names another database for its xid, so one that
// ended between the snapshot and that read is waited for, which is safe.
//
// The same statement counts the rows held back: those after the cursor ($1,
// $2) at or above the horizon, committed by a transaction that began after
// one still open (rows of the open transaction itself are not visible until
// it commits); it answers the horizon, their count and the oldest one's time.
var horizonQuery = func() string {
	held := ""
	for i, t := range inboundTables {
		if i > 0 {
			held += " UNION ALL "
		}
		held += fmt.Sprintf("SELECT created_at FROM %s WHERE (xid, id) > ($1::text::xid8, $2::bigint) AND xid >= h.x", t.table)
	}
	return `WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap),
h AS (SELECT COALESCE(
	(SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x WHERE NOT EXISTS (
		SELECT 1 FROM pg_stat_activity a WHERE a.backend_xid = xid(x) AND a.datname IS DISTINCT FROM current_database())),
	(SELECT pg_snapshot_xmax(snap) FROM s)) AS x)
SELECT h.x::text, count(r.created_at), min(r.created_at) FROM h LEFT JOIN LATERAL (` + held + `) AS r ON true GROUP BY h.x`
}()

// inboundQuery reads the next rows after the cursor ($1, $2) and below the
// horizon ($4, horizonQuery's), in (xid, id) order. The horizon is read in a
// statement before: every transaction below it had ended then, so a later
// snapshot sees the same rows below it.
var inboundQuery = func() string {
	q := "SELECT kind, id, xid::text, created_at, account_id, name, plan, credits, purchase_id, key_id, key_hash, key_hint FROM ("
	for i, t := range inboundTables {
		if i > 0 {
			q += " UNION ALL "
		}
		q += fmt.Sprintf("(SELECT '%s' AS kind, id, xid, created_at, %s FROM %s WHERE (xid, id) > ($1::text::xid8, $2::bigint) AND xid < $4::text::xid8 ORDER BY xid, id LIMIT $3)",
			t.kind, t.cols, t.table)
	}
	return q + ") AS r(kind, id, xid, created_at, account_id, name, plan, credits, purchase_id, key_id, key_hash, key_hint)" +
		" ORDER BY r.xid, r.id LIMIT $3"
}()

// blockerQuery describes the open transaction with xid $1 (the horizon), for
// the warning that names it. Its state and age are empty for another role's
// session unless the bridge's role may read them (a superuser, or a member
// of pg_read_all_stats).
const blockerQuery = `SELECT pid, COALESCE(datname, ''), COALESCE(usename, ''), COALESCE(application_name, ''), COALESCE(state, ''),
	COALESCE(extract(epoch FROM now() - xact_start), 0)::float8
	FROM pg_stat_activity WHERE backend_xid = xid($1::text::xid8) LIMIT 1`

// inRow is one row of an inbound table; columns the table lacks are nil.
type inRow struct {
	Kind       string    `json:"table"`
	ID         int64     `json:"id"`
	Xid        uint64    `json:"xid"`
	Created    time.Time `json:"created_at"`
	AccountID  *string   `json:"account_id,omitempty"`
	Name       *string   `json:"name,omitempty"`
	Plan       *string   `json:"plan,omitempty"`
	Credits    *int64    `json:"credits,omitempty"`
	PurchaseID *string   `json:"purchase_id,omitempty"`
	KeyID      *string   `json:"key_id,omitempty"`
	KeyHash    []byte    `json:"key_hash,omitempty"`
	KeyHint    *string   `json:"key_hint,omitempty"`
}

func (r inRow) mark() fsm.InboundMark { return fsm.InboundMark{Xid: r.Xid, Seq: r.ID} }

// quarantined is a row refused, with why.
type quarantined struct {
	row    inRow
	reason string
}

func readInboundCursor(ctx context.Context, q pgxQuerier) (fsm.InboundMark, error) {
	var xid string
	var m fsm.InboundMark
	if err := q.QueryRow(ctx, `SELECT xid::text, seq FROM vidfarm_bridge_cursor WHERE name = 'inbound'`).Scan(&xid, &m.Seq); err != nil {
		return m, fmt.Errorf("read inbound cursor: %w", err)
	}
	x, err := strconv.ParseUint(xid, 10, 64)
	if err != nil {
		return m, fmt.Errorf("inbound cursor xid %q: %w", xid, err)
	}
	m.Xid = x
	return m, nil
}

// pgxQuerier is a pool, a connection or a transaction.
type pgxQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// held is what waits behind an open transaction: rows committed at or above
// the horizon, and the oldest one's time.
type held struct {
	rows   int64
	oldest time.Time
}

// readHorizon runs horizonQuery for the rows after the cursor.
func readHorizon(ctx context.Context, q pgxQuerier, after fsm.InboundMark) (uint64, held, error) {
	var s string
	var h held
	var oldest *time.Time
	if err := q.QueryRow(ctx, horizonQuery, strconv.FormatUint(after.Xid, 10), after.Seq).Scan(&s, &h.rows, &oldest); err != nil {
		return 0, h, fmt.Errorf("read the oldest open transaction: %w", err)
	}
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, h, fmt.Errorf("oldest open transaction %q: %w", s, err)
	}
	if oldest != nil {
		h.oldest = *oldest
	}
	return x, h, nil
}

func fetchInbound(ctx context.Context, q pgxQuerier, after fsm.InboundMark, horizon uint64, limit int) ([]inRow, error) {
	rows, err := q.Query(ctx, inboundQuery, strconv.FormatUint(after.Xid, 10), after.Seq, limit, strconv.FormatUint(horizon, 10))
	if err != nil {
		return nil, fmt.Errorf("read inbound rows: %w", err)
	}
	defer rows.Close()
	var out []inRow
	for rows.Next() {
		var r inRow
		var xid string
		if err := rows.Scan(&r.Kind, &r.ID, &xid, &r.Created, &r.AccountID, &r.Name, &r.Plan, &r.Credits,
			&r.PurchaseID, &r.KeyID, &r.KeyHash, &r.KeyHint); err != nil {
			return nil, fmt.Errorf("scan inbound row: %w", err)
		}
		if r.Xid, err = strconv.ParseUint(xid, 10, 64); err != nil {
			return nil, fmt.Errorf("inbound row %d: xid %q: %w", r.ID, xid, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read inbound rows: %w", err)
	}
	return out, nil
}

// inbound applies the next batch of app rows and commits the cursor past them.
func (b *Bridge) inbound(ctx context.Context, pool *pgxpool.Pool) (more bool, err error) {
	cur, err := readInboundCursor(ctx, pool)
	if err != nil {
		return false, err
	}
	horizon, h, err := readHorizon(ctx, pool, cur)
	if err != nil {
		return false, err
	}
	rows, err := fetchInbound(ctx, pool, cur, horizon, b.cfg.Batch)
	if err != nil {
		return false, err
	}
	b.warnHeld(ctx, pool, h, horizon)
	b.update(func(st *Status) {
		st.InboundCursor = fmt.Sprintf("%d/%d", cur.Xid, cur.Seq)
		st.InboundHeldRows = h.rows
		oldest := h.oldest
		if len(rows) > 0 && (oldest.IsZero() || rows[0].Created.Before(oldest)) {
			oldest = rows[0].Created
		}
		st.InboundLagSeconds = 0
		if !oldest.IsZero() {
			st.InboundLagSeconds = b.age(oldest.UnixNano())
		}
	})
	if len(rows) == 0 {
		return false, nil
	}
	q, err := b.applyRows(ctx, rows)
	if err != nil {
		return false, err
	}
	last := rows[len(rows)-1].mark()
	if err := commitInbound(ctx, pool, last, q); err != nil {
		return false, err
	}
	b.update(func(st *Status) { st.InboundCursor = fmt.Sprintf("%d/%d", last.Xid, last.Seq) })
	if len(b.cfg.FSM.AppExport().Refused) > 0 {
		if _, err := b.cfg.Node.Apply(ctx, &fsm.TrimExported{Inbound: last}); err != nil {
			return false, fmt.Errorf("trim quarantined refusals: %w", err)
		}
	}
	return len(rows) == b.cfg.Batch, nil
}

// warnHeld logs, when a transaction begins to hold app rows back and once a
// minute while it does, that they wait behind it, naming it: an idle session
// left in a transaction, a long batch job or migration that wrote anything
// stops purchases and key revocations until it ends, and the app's engineer
// needs to know which.
func (b *Bridge) warnHeld(ctx context.Context, pool *pgxpool.Pool, h held, horizon uint64) {
	if h.rows == 0 || b.cfg.Now().Sub(h.oldest) < b.cfg.HeldWarnAfter {
		return
	}
	b.mu.Lock()
	due := horizon != b.heldWarnedXid || b.cfg.Now().Sub(b.heldWarnedAt) >= time.Minute
	if due {
		b.heldWarnedAt, b.heldWarnedXid = b.cfg.Now(), horizon
	}
	b.mu.Unlock()
	if !due {
		return
	}
	args := []any{"held_rows", h.rows, "oldest_held_seconds", int64(b.cfg.Now().Sub(h.oldest).Seconds()), "blocking_xid", horizon}
	var (
		pid                  int32
		db, user, app, state string
		open                 float64
	)
	err := pool.QueryRow(ctx, blockerQuery, strconv.FormatUint(horizon, 10)).Scan(&pid, &db, &user, &app, &state, &open)
	switch {
	case err == nil:
		args = append(args, "pid", pid, "database", db, "user", user, "application_name", app, "state", state, "open_seconds", int64(open))
	case errors.Is(err, pgx.ErrNoRows):
		args = append(args, "pid", nil, "hint", "the transaction is not in pg_stat_activity: a prepared transaction (pg_prepared_xacts), or a session this role may not see (grant it pg_read_all_stats)")
	default:
		args = append(args, "describe_err", err)
	}
	b.cfg.Logger.Warn("app rows wait behind a transaction still open in the app database; they apply once it commits or rolls back", args...)
}

// applyRows sends the well-formed rows to the FSM in one command, in order, and
// returns the rows to quarantine: malformed ones and those the FSM refused.
func (b *Bridge) applyRows(ctx context.Context, rows []inRow) ([]quarantined, error) {
	var q []quarantined
	cmd := &fsm.AppRows{}
	var sent []inRow
	now := b.cfg.Now().UnixNano()
	for _, r := range rows {
		row, err := toAppRow(r, now)
		if err != nil {
			q = append(q, quarantined{r, err.Error()})
			continue
		}
		cmd.Rows = append(cmd.Rows, row)
		sent = append(sent, r)
	}
	var applied int
	if len(cmd.Rows) > 0 {
		results, err := fsm.Do(ctx, b.cfg.Node, cmd)
		if err != nil {
			return nil, fmt.Errorf("apply %d app rows: %w", len(cmd.Rows), err)
		}
		for i, res := range results {
			if res.Refusal != "" {
				q = append(q, quarantined{sent[i], res.Refusal})
			}
			if res.Applied {
				applied++
			}
		}
	}
	for _, x := range q {
		b.cfg.Logger.Warn("app row quarantined", "table", x.row.Kind, "id", x.row.ID, "reason", x.reason)
	}
	b.metrics.applied.Add(float64(applied))
	b.metrics.quarantined.Add(float64(len(q)))
	b.update(func(st *Status) {
		st.RowsApplied += int64(applied)
		st.RowsQuarantined += int64(len(q))
	})
	return q, nil
}

func commitInbound(ctx context.Context, pool *pgxpool.Pool, last fsm.InboundMark, q []quarantined) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, x := range q {
			data, err := json.Marshal(x.row)
			if err != nil {
				return fmt.Errorf("encode quarantined row %d: %w", x.row.ID, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO vidfarm_inbound_quarantine (id, table_name, row_data, reason)
				VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`, x.row.ID, x.row.Kind, data, x.reason); err != nil {
				return fmt.Errorf("quarantine row %d: %w", x.row.ID, err)
			}
		}
		_, err := tx.Exec(ctx, `UPDATE vidfarm_bridge_cursor SET xid = $1::text::xid8, seq = $2, updated_at = now()
			WHERE name = 'inbound' AND (xid, seq) < ($1::text::xid8, $2)`, strconv.FormatUint(last.Xid, 10), last.Seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("commit inbound cursor: %w", err)
	}
	return nil
}
