package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/zizq/zizq/store"
)

// Another store's backups are SQLite databases too, so that one archive
// format, read by Restore and OpenArchive, serves every store: the other
// store fills a new database through this store's ops (BuildArchive) and
// reads one back through its reads (OpenArchive).

// BuildArchive writes a backup archive of a database that fill makes: it
// opens a new, empty store in dir (a directory of its own, which the caller
// removes), calls fill with it, raises the database's job-ID high-water
// mark to highWater and writes the database as WriteArchive does.
func BuildArchive(ctx context.Context, dir string, w io.Writer, highWater string, fill func(*DB) error) error {
	at := time.Now()
	db, err := Open(ctx, dir, Options{DefaultMode: store.Buffered, EnqueueMode: store.Buffered,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	err = fill(db)
	if err == nil {
		err = db.Barrier(ctx)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	path := filepath.Join(dir, FileName)
	if err := setHighWater(ctx, path, highWater); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	size, err := fileSize(path)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return (&Snapshot{path: path, size: size, at: at}).WriteArchive(w)
}

// setHighWater raises the saved high-water mark of a closed database.
func setHighWater(ctx context.Context, path, mark string) error {
	if mark == "" {
		return nil
	}
	conn, err := sql.Open("sqlite", dsn(path, 1<<20, false))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('id_high_water', ?1)
		ON CONFLICT (key) DO UPDATE SET value = max(value, ?1)`, mark)
	return err
}

// OpenArchive restores a backup (an archive or a bare database file, as
// Restore takes) into dir, which must be missing or empty, and opens it: a
// read of its content, for another store to load. Close the DB and remove
// dir after.
func OpenArchive(ctx context.Context, src, dir string) (*DB, error) {
	if err := Restore(ctx, src, dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open backup: %w", err)
		}
		return nil, err
	}
	return Open(ctx, dir, Options{Logger: slog.New(slog.DiscardHandler)})
}
