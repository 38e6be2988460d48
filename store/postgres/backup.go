package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// Backups are SQLite databases in SQLite's archive format (a tar.gz
// holding zizq-root/data/zizq.db), so that `zizq restore` reads one format
// into either store. A backup copies one REPEATABLE READ snapshot, row by
// row through the SQLite store's ops, into a database in a temporary
// directory; Restore copies an archive's database into an empty PostgreSQL
// store the same way back.

// copyChunk is how many ops go in one group of the copy.
const copyChunk = 500

// ErrNotEmpty is returned by Restore when the store holds anything.
var ErrNotEmpty = errors.New("target database is not empty")

// Backup writes a consistent snapshot of the store, as of the call, as a
// backup archive; writes go on meanwhile. It needs temporary disk space
// for the database it builds.
func (db *DB) Backup(ctx context.Context, w io.Writer) error {
	dir, err := os.MkdirTemp("", "zizq-backup-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(dir)
	return readTx(ctx, db.pool, func(tx pgx.Tx) error {
		mark, err := maxJobID(ctx, tx)
		if err != nil {
			return err
		}
		return sqlite.BuildArchive(ctx, dir, w, mark, func(out *sqlite.DB) error {
			return copyOut(ctx, tx, out)
		})
	})
}

// copier appends ops to a store in groups of copyChunk, with at most one
// group waiting for its commit.
type copier struct {
	ctx  context.Context
	dst  store.Store
	ops  []store.Op
	last store.Pending
}

func (c *copier) add(o store.Op) error {
	c.ops = append(c.ops, o)
	if len(c.ops) < copyChunk {
		return nil
	}
	return c.flush()
}

func (c *copier) flush() error {
	if len(c.ops) == 0 {
		return nil
	}
	if c.last != nil {
		if err := c.last.Wait(c.ctx); err != nil {
			return err
		}
	}
	c.last = c.dst.Append(c.ops...)
	c.ops = nil
	return nil
}

func (c *copier) done() error {
	if err := c.flush(); err != nil {
		return err
	}
	if c.last != nil {
		return c.last.Wait(c.ctx)
	}
	return nil
}

// copyOut copies everything the snapshot tx sees into dst.
func copyOut(ctx context.Context, tx pgx.Tx, dst store.Store) error {
	c := &copier{ctx: ctx, dst: dst}
	budgets, err := queryBudgets(ctx, tx)
	if err != nil {
		return fmt.Errorf("read budgets: %w", err)
	}
	for _, b := range budgets {
		if err := c.add(store.PutBudget(b)); err != nil {
			return err
		}
	}
	groups, err := queryCronGroups(ctx, tx)
	if err == nil {
		err = queryCronEntries(ctx, tx, groups)
	}
	if err != nil {
		return fmt.Errorf("read cron groups: %w", err)
	}
	for _, g := range groups {
		if err := c.add(store.PutCronGroup(g)); err != nil {
			return err
		}
		for _, e := range g.Entries {
			if err := c.add(store.PutCronEntry(e)); err != nil {
				return err
			}
		}
	}
	if err := copyRows(ctx, tx, `SELECT `+jobColumns+` FROM jobs ORDER BY id`, func(r pgx.Rows) (store.Op, error) {
		j, err := scanJob(r)
		return store.InsertJob(j), err
	}, c); err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	if err := copyRows(ctx, tx, `SELECT `+errorColumns+` FROM job_errors ORDER BY job_id, attempt`, func(r pgx.Rows) (store.Op, error) {
		e, err := scanError(r)
		return store.AddError(e), err
	}, c); err != nil {
		return fmt.Errorf("read error records: %w", err)
	}
	// Inserting made each keyed job its key's holder in ID order; the
	// holders are the engine's choice: release every key, then hold the
	// holders' (one holder per key at every step).
	for _, holds := range []bool{false, true} {
		err := copyRows(ctx, tx, `SELECT id FROM jobs WHERE unique_key IS NOT NULL AND coalesce(unique_holder, false) = $1`,
			func(r pgx.Rows) (store.Op, error) {
				var id string
				err := r.Scan(&id)
				if holds {
					return store.HoldUniqueKey(id), err
				}
				return store.ReleaseUniqueKey(id), err
			}, c, holds)
		if err != nil {
			return fmt.Errorf("read unique keys: %w", err)
		}
	}
	return c.done()
}

// copyRows appends the op of every row of a query.
func copyRows(ctx context.Context, q querier, query string, op func(pgx.Rows) (store.Op, error), c *copier, args ...any) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return wrapConn(err)
	}
	defer rows.Close()
	for rows.Next() {
		o, err := op(rows)
		if err != nil {
			return err
		}
		if err := c.add(o); err != nil {
			return err
		}
	}
	return wrapConn(rows.Err())
}

// Restore loads a backup (an archive of `zizq backup`, or a bare SQLite
// database) into the empty store at url, migrating its schema first. A
// store holding any job, budget, cron group or job-ID mark is refused:
// Restore never replaces data. Run it while no server uses the database.
// log receives what opening the store logs (its migration); nil means
// slog.Default().
func Restore(ctx context.Context, url, src string, log *slog.Logger) error {
	db, err := Open(ctx, Options{URL: url, Logger: log})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.checkEmpty(ctx); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "zizq-restore-*")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(dir)
	in, err := sqlite.OpenArchive(ctx, src, dir)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := copyIn(ctx, in, db); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
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

// copyIn copies everything of the SQLite store src into dst, through the
// store interface.
func copyIn(ctx context.Context, src *sqlite.DB, dst *DB) error {
	c := &copier{ctx: ctx, dst: dst}
	budgets, err := src.Budgets(ctx)
	if err != nil {
		return err
	}
	for _, b := range budgets {
		if err := c.add(store.PutBudget(b)); err != nil {
			return err
		}
	}
	groups, err := src.CronGroups(ctx)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := c.add(store.PutCronGroup(g)); err != nil {
			return err
		}
		for _, e := range g.Entries {
			if err := c.add(store.PutCronEntry(e)); err != nil {
				return err
			}
		}
	}
	var keyed []string
	holders := map[string]bool{}
	for from := ""; ; {
		jobs, more, err := src.ListJobs(ctx, store.Filter{}, from, store.Asc, copyChunk)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if err := c.add(store.InsertJob(j)); err != nil {
				return err
			}
			if err := copyErrors(ctx, src, j.ID, c); err != nil {
				return err
			}
			if j.UniqueKey != "" {
				keyed = append(keyed, j.ID)
			}
		}
		if !more {
			break
		}
		from = jobs[len(jobs)-1].ID
	}
	mark := ""
	err = src.Load(ctx, store.Loader{
		Unique: func(u store.UniqueJob) error { holders[u.ID] = u.Holds; return nil },
		MaxID:  func(id string) { mark = id },
	})
	if err != nil {
		return err
	}
	for _, holds := range []bool{false, true} {
		for _, id := range keyed {
			if holders[id] != holds {
				continue
			}
			o := store.ReleaseUniqueKey(id)
			if holds {
				o = store.HoldUniqueKey(id)
			}
			if err := c.add(o); err != nil {
				return err
			}
		}
	}
	if err := c.done(); err != nil {
		return err
	}
	return dst.raiseHighWater(ctx, mark)
}

func copyErrors(ctx context.Context, src *sqlite.DB, id string, c *copier) error {
	for from := uint32(0); ; {
		recs, more, err := src.ListErrors(ctx, id, from, store.Asc, copyChunk)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := c.add(store.AddError(r)); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		from = recs[len(recs)-1].Attempt
	}
}

// raiseHighWater raises the job-ID high-water mark to at least mark.
func (db *DB) raiseHighWater(ctx context.Context, mark string) error {
	if mark == "" {
		return nil
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('id_high_water', $1)
		ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value, excluded.value)`, mark)
	return wrapConn(err)
}
