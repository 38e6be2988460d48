package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/zizq/zizq/store/archive"
)

// Backups. An online backup is a consistent snapshot of the database taken
// with VACUUM INTO on a connection of its own: one read transaction, so it
// sees every commit up to its start and none after, while the writer goes on.
// The snapshot is written to a file in the data directory first (the archive
// needs its size) and sent as a backup archive (store/archive), whose
// database is this store's own file.

// snapshotPrefix names snapshot files in the data directory; Open removes
// those a crash left behind.
const snapshotPrefix = ".snapshot-"

// Snapshot is a consistent copy of the database in a temporary file. Write
// it out with WriteArchive, then Close it to remove the file.
type Snapshot struct {
	path string
	size int64
	at   time.Time
}

// Snapshot copies the database as of now into a temporary file in the data
// directory. It needs as much free disk as the database's live data and
// does not block writes.
func (db *DB) Snapshot(ctx context.Context) (_ *Snapshot, err error) {
	f, err := os.CreateTemp(db.dir, snapshotPrefix+"*.db")
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	path := f.Name()
	_ = f.Close() // VACUUM INTO accepts an empty file
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	// Its own connection: VACUUM INTO is refused on the read pool's
	// query_only connections, and the writer's must not wait for it. One
	// at a time, as the page cache's bound counts one (cacheShare).
	db.snapshotMu.Lock()
	defer db.snapshotMu.Unlock()
	conn, err := sql.Open("sqlite", dsn(db.path, db.cacheShare(), false))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer conn.Close()
	at := time.Now()
	if _, err := conn.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return nil, fmt.Errorf("snapshot: %w", wrapUnavailable(err))
	}
	if err := syncFile(path); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	size, err := fileSize(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &Snapshot{path: path, size: size, at: at}, nil
}

// Backup writes a consistent snapshot of the database, as of the call, as
// the tar.gz archive of WriteArchive. The snapshot goes through a temporary
// file in the data directory (see Snapshot), removed before it returns.
func (db *DB) Backup(ctx context.Context, w io.Writer) (err error) {
	snap, err := db.Snapshot(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, snap.Close()) }()
	return snap.WriteArchive(w)
}

// Size returns the size of the snapshot's database file.
func (s *Snapshot) Size() int64 { return s.size }

// WriteArchive writes the snapshot as a backup archive (archive.Write).
func (s *Snapshot) WriteArchive(w io.Writer) error { return archive.Write(w, s.path, s.at) }

// Close removes the snapshot's file.
func (s *Snapshot) Close() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove snapshot: %w", err)
	}
	return nil
}

// removeStaleSnapshots deletes snapshot files left by a crash.
func removeStaleSnapshots(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, snapshotPrefix+"*"))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

// ErrTargetNotEmpty is returned by Restore when the data directory holds
// anything already.
var ErrTargetNotEmpty = errors.New("target data directory is not empty")

// Restore makes dataDir hold the database of a backup: a tar.gz written by
// WriteArchive (`zizq backup`), or a bare SQLite database file. dataDir must
// be missing or empty: Restore never replaces data. The database is checked
// (SQLite's quick_check, and a schema this zizq can open) before it is put
// in place, atomically, under FileName; a newer zizq's backup is refused.
// Run it while no server uses dataDir; the next Open migrates the schema.
func Restore(ctx context.Context, src, dataDir string) (err error) {
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: %s", ErrTargetNotEmpty, dataDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read target: %w", err)
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open backup: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, ".restore-*.db")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmpPath := tmp.Name()
	defer func() {
		_ = tmp.Close()
		if err != nil {
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				_ = os.Remove(tmpPath + suffix)
			}
		}
	}()

	if err := archive.Unpack(in, tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := checkDatabaseFile(ctx, tmpPath); err != nil {
		return err
	}
	convertOffline(ctx, tmpPath)
	if err := os.Rename(tmpPath, filepath.Join(dataDir, FileName)); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := syncFile(dataDir); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// checkDatabaseFile opens a database file that no server uses and checks
// that it is sound and that this zizq can open its schema.
func checkDatabaseFile(ctx context.Context, path string) error {
	conn, err := sql.Open("sqlite", dsn(path, 8<<20, true))
	if err != nil {
		return fmt.Errorf("check backup: %w", err)
	}
	defer conn.Close()
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("check backup: not a zizq database: %w", err)
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	if version > len(ms) {
		return fmt.Errorf("backup schema version %d is newer than this zizq supports (%d): restore it with a newer zizq", version, len(ms))
	}
	var ok string
	if err := conn.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&ok); err != nil {
		return fmt.Errorf("check backup: %w", err)
	}
	if ok != "ok" {
		return fmt.Errorf("check backup: database is damaged: %s", ok)
	}
	var jobs int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'jobs'").Scan(&jobs); err != nil || jobs != 1 {
		return errors.New("check backup: not a zizq database: it has no jobs table")
	}
	return nil
}

// convertOffline switches a database file that no server uses to
// incremental auto-vacuum (a VACUUM), whatever its size: a restore is the
// moment to do it for a database too large to convert at open. Best effort:
// on failure (e.g. a full disk) the database keeps working without it.
func convertOffline(ctx context.Context, path string) {
	conn, err := sql.Open("sqlite", dsn(path, 64<<20, false))
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	var mode int
	if err := conn.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil || mode == 2 {
		return
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err == nil {
		_, _ = conn.ExecContext(ctx, "VACUUM")
	}
}

// syncFile fsyncs a file or a directory (so a rename in it is durable).
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
