package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
)

// migrationFiles holds the schema, one file per version: NNNN_name.sql.
// The database records the version it is at in PRAGMA user_version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the migrations of fsys (dir "migrations"), sorted by
// version, and checks that versions run 1, 2, 3… without gaps.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", name)
		}
		body, err := fs.ReadFile(fsys, path.Join("migrations", name))
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

// migrate brings the schema up to date with the embedded migrations.
func migrate(ctx context.Context, conn *sql.Conn, log *slog.Logger) error {
	return migrateFS(ctx, conn, migrationFiles, log)
}

// migrateFS applies the pending migrations of fsys in one transaction, so a
// failure leaves the database as it was. A database whose version is newer
// than the newest migration was written by a newer zizq and is refused.
func migrateFS(ctx context.Context, conn *sql.Conn, fsys fs.FS, log *slog.Logger) (err error) {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	latest := len(ms)

	// IMMEDIATE takes the write lock before reading the version, so two
	// processes opening a new database cannot both migrate it.
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: %w", wrapUnavailable(err))
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()

	var current int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > latest {
		return fmt.Errorf("database schema version %d is newer than this zizq supports (%d)", current, latest)
	}
	for _, m := range ms[current:] {
		if _, err := conn.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, wrapUnavailable(err))
		}
	}
	if current == latest {
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return fmt.Errorf("migrate: %w", wrapUnavailable(err))
		}
		return nil
	}
	// user_version lives in the database header, so it commits (or rolls
	// back) with the schema changes.
	if _, err := conn.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(latest)); err != nil {
		return fmt.Errorf("set schema version: %w", wrapUnavailable(err))
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate: %w", wrapUnavailable(err))
	}
	log.Info("database schema migrated", "from", current, "to", latest)
	return nil
}
