package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/internal/rootlock"
	"github.com/zizq/zizq/store/postgres"
	"github.com/zizq/zizq/store/sqlite"
)

// RestoreOptions are the flags of `restore`.
type RestoreOptions struct {
	RootDir     string
	DatabaseURL string
	// The log's, as serve's: what the store logs as it opens (a
	// PostgreSQL schema migrated) goes to standard error.
	LogLevel, LogFormat string
}

func newRestoreCmd(streams IO) *cobra.Command {
	o := &RestoreOptions{}
	c := &cobra.Command{
		Use:   "restore --root-dir DIR FILE",
		Short: "Restore a backup into an empty root directory (offline)",
		Long: `Restore a backup made by 'zizq backup' (a tar.gz holding
zizq-root/data/zizq.db, or a bare database file) into <root-dir>/data, for
'zizq serve --root-dir DIR' to serve. It runs without a server and talks to
none.

It refuses a target that holds data already: it never replaces a database.
The database is checked (SQLite's quick_check, and a schema this zizq can
open: a newer zizq's backup is refused) before it is put in place. Jobs that
were in flight when the backup was taken are ready again when the server
starts; the server migrates an older schema on its first start.

With --database-url it loads the same archive into an empty PostgreSQL
database instead, for a cluster (stop its servers first).

A restore that fails removes what it made (the root directory, its data
directory, its lock file), so it can be run again as it was. It logs as
'zizq serve' does (--log-level, --log-format).`,
		Example: `  zizq restore --root-dir /var/lib/zizq /var/backups/zizq-2026-01-02.tar.gz
  zizq restore --database-url postgres://zizq@db/zizq /var/backups/zizq-2026-01-02.tar.gz`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(c *cobra.Command, _ []string) error {
			return applyEnv(c)
		},
		RunE: func(c *cobra.Command, args []string) error {
			log, err := newLogger(streams.Err, o.LogLevel, o.LogFormat)
			if err != nil {
				return err
			}
			if o.DatabaseURL != "" {
				if err := checkDatabaseURL(o.DatabaseURL); err != nil {
					return err
				}
				if err := postgres.Restore(c.Context(), args[0], postgres.Options{URL: o.DatabaseURL, Logger: log, Archive: sqlite.ArchiveBody{}}); err != nil {
					return err
				}
				_, err := fmt.Fprintf(streams.Out, "Restored %s into the database. Start the servers with: zizq serve --database-url URL\n", args[0])
				return err
			}
			data := filepath.Join(o.RootDir, "data")
			if err := restoreRoot(c.Context(), args[0], o.RootDir); err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "Restored %s into %s. Start the server with: zizq serve --root-dir %s\n", args[0], data, o.RootDir)
			return err
		},
	}
	c.Flags().StringVar(&o.LogLevel, "log-level", "info", "log level: trace, debug, info, warn or error (trace logs as debug)")
	withEnv(c.Flags(), "log-level", "ZIZQ_LOG_LEVEL")
	c.Flags().StringVar(&o.LogFormat, "log-format", "text", "log format: text or json")
	withEnv(c.Flags(), "log-format", "ZIZQ_LOG_FORMAT")
	c.Flags().StringVar(&o.RootDir, "root-dir", "./zizq-root", "root directory to restore into (database in <root-dir>/data, which must be empty)")
	withEnv(c.Flags(), "root-dir", "ZIZQ_ROOT_DIR")
	c.Flags().StringVar(&o.DatabaseURL, "database-url", "", "PostgreSQL database (postgres://...) to restore into, in place of --root-dir; it must be empty")
	withEnv(c.Flags(), "database-url", "ZIZQ_DATABASE_URL")
	return c
}

// restoreRoot restores src into root's data directory under root's lock: a
// server starting on the root meanwhile would open a half-restored
// database. When it fails it removes, still holding the lock, what it made
// (the lock file, the data directory, the root), so that a failed restore
// leaves the disk as it was and no empty data/ a server would start on.
// Removing a lock file is safe here only because the restore made it: no
// server knew the root.
func restoreRoot(ctx context.Context, src, root string) (err error) {
	data := filepath.Join(root, "data")
	made := missingPaths(root, data, filepath.Join(root, rootlock.FileName))
	lock, err := rootlock.Acquire(root)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			for _, p := range slices.Backward(made) {
				_ = os.Remove(p) // never RemoveAll: only what is empty and ours
			}
		}
		_ = lock.Release()
	}()
	return sqlite.Restore(ctx, src, data)
}

// missingPaths returns those of paths that do not exist, in order.
func missingPaths(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}
