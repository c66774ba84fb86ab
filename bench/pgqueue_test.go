package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the Postgres queue that BenchmarkDispatchPostgres compares the
// scheduler with: the FOR UPDATE SKIP LOCKED work queue many teams build
// instead of a scheduler. It is deliberately small and honest, and it lives
// in a test file so that pgx never reaches the vidfarm binary.
//
// What it does: hard constraints (GPU memory, model), priority, then age.
// What it leaves out, which makes the comparison generous to Postgres:
// per-account fair share (a window function or a per-account round robin
// in SQL costs a scan of the ready set per dispatch, so real queues skip
// it), the warm-model preference, GPU/CPU capacity accounting on the node,
// fencing tokens, failure counting and blocklists.

// pgDefaultDSN is the local test database; VIDFARM_TEST_PG overrides it.
const pgDefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// pgDSN is the database the Postgres benchmark and test use.
func pgDSN() string {
	if dsn := os.Getenv("VIDFARM_TEST_PG"); dsn != "" {
		return dsn
	}
	return pgDefaultDSN
}

// pgConnect opens one connection, failing within a few seconds when the
// server is unreachable.
func pgConnect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// pgTask is one row to enqueue.
type pgTask struct {
	Account  string
	Priority int
	MemGB    float64
	Model    string
}

// pgLease is a dispatched row.
type pgLease struct {
	ID   int64
	Node string
	Task pgTask
}

// pgQueue is a task table in a schema of its own (unique per run).
type pgQueue struct {
	schema string
	table  string // schema-qualified, quoted

	dispatchSQL string
	completeSQL string
}

// newPGQueue names a fresh schema; create makes it.
func newPGQueue() *pgQueue {
	schema := fmt.Sprintf("vidfarm_bench_%d_%08x", os.Getpid(), rand.Uint32())
	q := &pgQueue{schema: schema, table: pgx.Identifier{schema, "tasks"}.Sanitize()}
	// Dispatch: one statement, so one implicit transaction and one round
	// trip: lock the best ready row that fits (skipping rows other
	// dispatchers hold) and lease it. The subquery is evaluated once.
	q.dispatchSQL = `UPDATE ` + q.table + ` SET state = 'leased', leased_by = $1,
		lease_until = now() + make_interval(secs => $2)
	WHERE id = (
		SELECT id FROM ` + q.table + `
		WHERE state = 'ready' AND gpu_mem_gb <= $3::real AND model = ANY($4::text[])
		ORDER BY priority DESC, created_at
		LIMIT 1
		FOR UPDATE SKIP LOCKED)
	RETURNING id, account, priority, gpu_mem_gb, model`
	// Completion: the holder deletes its row and, in the same statement,
	// enqueues the next task (the benchmark keeps the queue full).
	q.completeSQL = `WITH done AS (
		DELETE FROM ` + q.table + ` WHERE id = $1 AND state = 'leased' AND leased_by = $2 RETURNING id)
	INSERT INTO ` + q.table + ` (account, priority, gpu_mem_gb, model, state, created_at)
	SELECT $3, $4, $5, $6, 'ready', clock_timestamp() FROM done`
	return q
}

// create makes the schema, the table and the partial index on ready rows.
func (q *pgQueue) create(ctx context.Context, conn *pgx.Conn) error {
	for _, stmt := range []string{
		`CREATE SCHEMA ` + pgx.Identifier{q.schema}.Sanitize(),
		`CREATE TABLE ` + q.table + ` (
			id          bigserial PRIMARY KEY,
			account     text        NOT NULL,
			priority    int         NOT NULL,
			gpu_mem_gb  real        NOT NULL,
			model       text        NOT NULL,
			state       text        NOT NULL,
			leased_by   text,
			lease_until timestamptz,
			created_at  timestamptz NOT NULL)`,
		`CREATE INDEX tasks_ready ON ` + q.table + ` (priority DESC, created_at) WHERE state = 'ready'`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("create queue: %w", err)
		}
	}
	return nil
}

// drop removes the schema and everything in it.
func (q *pgQueue) drop(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{q.schema}.Sanitize()+` CASCADE`)
	return err
}

// load enqueues tasks with COPY, oldest first (created_at one microsecond
// apart, an hour ago, so tasks enqueued later are younger), then analyzes.
func (q *pgQueue) load(ctx context.Context, conn *pgx.Conn, tasks []pgTask) error {
	base := time.Now().Add(-time.Hour)
	rows := make([][]any, len(tasks))
	for i, t := range tasks {
		rows[i] = []any{t.Account, int32(t.Priority), float32(t.MemGB), t.Model, "ready", base.Add(time.Duration(i) * time.Microsecond)}
	}
	_, err := conn.CopyFrom(ctx, pgx.Identifier{q.schema, "tasks"},
		[]string{"account", "priority", "gpu_mem_gb", "model", "state", "created_at"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("load queue: %w", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE `+q.table); err != nil {
		return fmt.Errorf("analyze queue: %w", err)
	}
	return nil
}

// dispatch leases the best ready task node can run; ok is false when none fits.
func (q *pgQueue) dispatch(ctx context.Context, conn *pgx.Conn, node string, memGB float64, models []string, lease time.Duration) (l pgLease, ok bool, err error) {
	var prio int32
	var mem float32
	err = conn.QueryRow(ctx, q.dispatchSQL, node, lease.Seconds(), memGB, models).
		Scan(&l.ID, &l.Task.Account, &prio, &mem, &l.Task.Model)
	if errors.Is(err, pgx.ErrNoRows) {
		return pgLease{}, false, nil
	}
	if err != nil {
		return pgLease{}, false, fmt.Errorf("dispatch for %s: %w", node, err)
	}
	l.Node, l.Task.Priority, l.Task.MemGB = node, int(prio), float64(mem)
	return l, true, nil
}

// completeAndRefill ends a lease held by its node and enqueues next.
func (q *pgQueue) completeAndRefill(ctx context.Context, conn *pgx.Conn, l pgLease, next pgTask) error {
	tag, err := conn.Exec(ctx, q.completeSQL, l.ID, l.Node, next.Account, int32(next.Priority), float32(next.MemGB), next.Model)
	if err != nil {
		return fmt.Errorf("complete task %d: %w", l.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("complete task %d: not leased by %s", l.ID, l.Node)
	}
	return nil
}
