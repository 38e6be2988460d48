package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles holds the schema, one file per version: NNNN_name.sql.
// The database records its version in schema_version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations, sorted by version, and
// checks that versions run 1, 2, 3… without gaps.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", name)
		}
		body, err := fs.ReadFile(migrationFiles, path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrateLockKey is the advisory lock that serialises migrations; it is
// combined with the schema's name, so that stores in different schemas of
// one database (tests) migrate side by side.
const migrateLockKey = "zizq-migrate:"

// migrate brings the schema up to date in one transaction, under a
// transaction-scoped advisory lock: servers starting together on a new
// database wait for each other and the first migrates it. A database whose
// version is newer than the newest migration is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	ms, err := loadMigrations()
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
		if current > len(ms) {
			return fmt.Errorf("database schema version %d is newer than this zizq supports (%d)", current, len(ms))
		}
		if current == len(ms) {
			return nil
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
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
