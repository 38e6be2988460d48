package postgres

import (
	"context"
	"embed"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zizq/zizq/store/internal/migration"
)

// migrationFiles holds the schema, one file per version: NNNN_name.sql.
// The database records its version in schema_version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the advisory lock that serialises migrations; it is
// combined with the schema's name, so that stores in different schemas of
// one database (tests) migrate side by side.
const migrateLockKey = "zizq-migrate:"

// migrate brings the schema up to date in one transaction, under a
// transaction-scoped advisory lock: servers starting together on a new
// database wait for each other and the first migrates it. A database whose
// version is newer than the newest migration is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	ms, err := migration.Load(migrationFiles)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1 || current_schema()))`, migrateLockKey); err != nil {
			return fmt.Errorf("migrate: lock: %w", wrapConn(err))
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", wrapConn(err))
		}
		current, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		pending, err := migration.Pending(ms, current)
		if err != nil || len(pending) == 0 {
			return err
		}
		for _, m := range pending {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM schema_version`); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, len(ms)); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		log.Info("database schema migrated", "from", current, "to", len(ms))
		return nil
	})
}

// schemaVersion reads the version a migration left (0: none yet).
func schemaVersion(ctx context.Context, q pgx.Tx) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Migrate brings the schema of the pool's database up to date: a cluster's
// node does so before its first election, which needs the leader table.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return migrate(ctx, pool, log)
}
