package appdb

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	out := make([]migration, 0, len(names))
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its number: %w", base, err)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// Migrate brings the schema of the connection's search path up to date: each
// migration not yet recorded in vidfarm_schema_migrations runs in one transaction
// with its record, under an advisory lock so two nodes never migrate at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.vidfarm_migrations'))`); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS vidfarm_schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "3F000" { // invalid_schema_name
				return fmt.Errorf("create migrations table: the search_path names no schema that exists: create it first (CREATE SCHEMA name): %w", err)
			}
			return fmt.Errorf("create migrations table: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM vidfarm_schema_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		for _, m := range ms {
			if m.version <= have {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO vidfarm_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
		}
		return checkPurchasesUnique(ctx, tx)
	})
}

// ErrPurchasesNotUnique is a vidfarm_app_purchases without a unique index on
// purchase_id alone: the app could insert a purchase twice and it would be
// granted twice, since the FSM does not keep every purchase id it ever saw.
// The migration makes the index, but keeps a table that already existed (a
// table made by hand, or by a tool that dropped the constraint).
var ErrPurchasesNotUnique = errors.New("vidfarm_app_purchases has no unique index on purchase_id, so a purchase inserted twice would be granted twice")

func checkPurchasesUnique(ctx context.Context, tx pgx.Tx) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = 'vidfarm_app_purchases'::regclass AND i.indisunique AND i.indisvalid
			AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attname = 'purchase_id')`).Scan(&ok); err != nil {
		return fmt.Errorf("check vidfarm_app_purchases' unique index: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w: add it (CREATE UNIQUE INDEX ON vidfarm_app_purchases (purchase_id), after removing duplicates) and the bridge goes on", ErrPurchasesNotUnique)
	}
	return nil
}
