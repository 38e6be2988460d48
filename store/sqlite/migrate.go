package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"

	"github.com/zizq/zizq/store/internal/migration"
)

// migrationFiles holds the schema, one file per version: NNNN_name.sql.
// The database records the version it is at in PRAGMA user_version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// loadMigrations reads the migrations of fsys (migration.Load).
func loadMigrations(fsys fs.FS) ([]migration.Migration, error) { return migration.Load(fsys) }

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
	pending, err := migration.Pending(ms, current)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, wrapUnavailable(err))
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
