package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/archive"
)

// Backups are zizq's one archive format (store/archive), whose database is
// the SQLite store's, made through Options.Archive. A backup copies one
// REPEATABLE READ snapshot, row by row as store ops, into a database in a
// temporary directory; Restore copies an archive's database into an empty
// PostgreSQL store the same way back.

// ErrNotEmpty is returned by Restore when the store holds anything.
var ErrNotEmpty = errors.New("target database is not empty")

// errNoArchive answers a backup or restore of a store opened without
// Options.Archive.
var errNoArchive = errors.New("no backup archive format: Options.Archive is not set")

// Backup writes a consistent snapshot of the store, as of the call, as a
// backup archive; writes go on meanwhile. It needs temporary disk space
// for the database it builds.
func (db *DB) Backup(ctx context.Context, w io.Writer) error {
	if db.opts.Archive == nil {
		return fmt.Errorf("backup: %w", errNoArchive)
	}
	return readTx(ctx, db.pool, func(tx pgx.Tx) error {
		return archive.Backup(ctx, db.opts.Archive, snapshot{tx}, w)
	})
}

// snapshot is the archive.Source of one read transaction.
type snapshot struct{ tx pgx.Tx }

func (s snapshot) Budgets(ctx context.Context) ([]store.Budget, error) {
	return queryBudgets(ctx, s.tx)
}

func (s snapshot) CronGroups(ctx context.Context) ([]store.CronGroup, error) {
	groups, err := queryCronGroups(ctx, s.tx)
	if err == nil {
		err = queryCronEntries(ctx, s.tx, groups)
	}
	return groups, err
}

func (s snapshot) Jobs(ctx context.Context, fn func(store.Job) error) error {
	return eachRow(ctx, s.tx, `SELECT `+jobColumns+` FROM jobs ORDER BY id`, func(r pgx.Rows) error {
		j, err := scanJob(r)
		if err != nil {
			return err
		}
		return fn(j)
	})
}

func (s snapshot) Errors(ctx context.Context, fn func(store.ErrorRecord) error) error {
	return eachRow(ctx, s.tx, `SELECT `+errorColumns+` FROM job_errors ORDER BY job_id, attempt`, func(r pgx.Rows) error {
		e, err := scanError(r)
		if err != nil {
			return err
		}
		return fn(e)
	})
}

func (s snapshot) Holders(ctx context.Context) (map[string]bool, error) {
	holders := map[string]bool{}
	err := eachRow(ctx, s.tx, `SELECT id FROM jobs WHERE unique_holder`, func(r pgx.Rows) error {
		var id string
		err := r.Scan(&id)
		holders[id] = true
		return err
	})
	return holders, err
}

func (s snapshot) HighWater(ctx context.Context) (string, error) {
	return maxJobID(ctx, s.tx)
}

// eachRow calls fn with every row of a query.
func eachRow(ctx context.Context, q querier, query string, fn func(pgx.Rows) error) error {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return wrapConn(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return wrapConn(rows.Err())
}

// Restore loads a backup (an archive of `zizq backup`, or a bare SQLite
// database) into the empty store of opts (opts.Archive reads it),
// migrating its schema first. A store holding any job, budget, cron group
// or job-ID mark is refused: Restore never replaces data. Run it while no
// server uses the database.
func Restore(ctx context.Context, src string, opts Options) error {
	if opts.Archive == nil {
		return fmt.Errorf("restore: %w", errNoArchive)
	}
	db, err := Open(ctx, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.checkEmpty(ctx); err != nil {
		return err
	}
	mark, err := archive.Restore(ctx, opts.Archive, src, db)
	if err != nil {
		return err
	}
	return db.raiseHighWater(ctx, mark)
}

// checkEmpty fails with ErrNotEmpty when the store holds anything.
func (db *DB) checkEmpty(ctx context.Context) error {
	var any bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs) OR EXISTS (SELECT 1 FROM budgets)
		OR EXISTS (SELECT 1 FROM cron_groups) OR EXISTS (SELECT 1 FROM meta)`).Scan(&any)
	if err != nil {
		return fmt.Errorf("restore: %w", wrapConn(err))
	}
	if any {
		return ErrNotEmpty
	}
	return nil
}

// raiseHighWater raises the job-ID high-water mark to at least mark.
func (db *DB) raiseHighWater(ctx context.Context, mark string) error {
	if mark == "" {
		return nil
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('id_high_water', $1)
		ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value, excluded.value)`, mark)
	if err != nil {
		return fmt.Errorf("restore: %w", wrapConn(err))
	}
	return nil
}
