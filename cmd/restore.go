package cmd

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/internal/rootlock"
	"github.com/zizq/zizq/store/postgres"
	"github.com/zizq/zizq/store/sqlite"
)

// RestoreOptions are the flags of `restore`.
type RestoreOptions struct {
	RootDir     string
	DatabaseURL string
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
database instead, for a cluster (stop its servers first).`,
		Example: `  zizq restore --root-dir /var/lib/zizq /var/backups/zizq-2026-01-02.tar.gz
  zizq restore --database-url postgres://zizq@db/zizq /var/backups/zizq-2026-01-02.tar.gz`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(c *cobra.Command, _ []string) error {
			return applyEnv(c)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if o.DatabaseURL != "" {
				if err := postgres.Restore(c.Context(), o.DatabaseURL, args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(streams.Out, "Restored %s into the database. Start the servers with: zizq serve --database-url URL\n", args[0])
				return err
			}
			// A server starting on the root meanwhile would open a
			// half-restored database.
			lock, err := rootlock.Acquire(o.RootDir)
			if err != nil {
				return err
			}
			defer lock.Release()
			data := filepath.Join(o.RootDir, "data")
			if err := sqlite.Restore(c.Context(), args[0], data); err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "Restored %s into %s. Start the server with: zizq serve --root-dir %s\n", args[0], data, o.RootDir)
			return err
		},
	}
	c.Flags().StringVar(&o.RootDir, "root-dir", "./zizq-root", "root directory to restore into (database in <root-dir>/data, which must be empty)")
	withEnv(c.Flags(), "root-dir", "ZIZQ_ROOT_DIR")
	c.Flags().StringVar(&o.DatabaseURL, "database-url", "", "PostgreSQL database (postgres://...) to restore into, in place of --root-dir; it must be empty")
	withEnv(c.Flags(), "database-url", "ZIZQ_DATABASE_URL")
	return c
}
