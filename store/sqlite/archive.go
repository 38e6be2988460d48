package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/zizq/zizq/store"
)

// ArchiveBody is the archive.Body of zizq's backups: the database inside
// every archive is this store's, so a store that is not SQLite builds and
// reads its backups through it.
type ArchiveBody struct{}

// Build opens a new store in dir, has fill fill it, raises the saved
// job-ID high-water mark to the mark fill returns and closes the store.
func (ArchiveBody) Build(ctx context.Context, dir string, fill func(store.Store) (string, error)) (string, error) {
	db, err := Open(ctx, dir, Options{DefaultMode: store.Buffered, EnqueueMode: store.Buffered,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", err
	}
	mark, err := fill(db)
	if err == nil {
		err = db.Barrier(ctx)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, FileName)
	if err := setHighWater(ctx, path, mark); err != nil {
		return "", fmt.Errorf("raise job-id mark: %w", err)
	}
	return path, nil
}

// Open restores the backup at src into dir as Restore does and opens it.
func (ArchiveBody) Open(ctx context.Context, src, dir string) (store.Store, error) {
	if err := Restore(ctx, src, dir); err != nil {
		return nil, err
	}
	return Open(ctx, dir, Options{Logger: slog.New(slog.DiscardHandler)})
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
