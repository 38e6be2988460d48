package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zizq/zizq/store"
)

// chunk is how many ops go in one appended group of a copy, and how many
// rows one page of a store's reads holds.
const chunk = 500

// Body makes and reads the database inside archives. The SQLite store's
// (sqlite.ArchiveBody) is the one of zizq's format.
type Body interface {
	// Build opens a new, empty store in dir (a directory of its own, which
	// the caller removes), calls fill with it, raises the store's job-ID
	// high-water mark to the mark fill returns, closes the store and
	// returns the path of its database file.
	Build(ctx context.Context, dir string, fill func(store.Store) (highWater string, err error)) (path string, err error)
	// Open unpacks the backup at src (as Unpack takes it) into dir, which
	// must be missing or empty, and opens it: a store to read, which the
	// caller closes before it removes dir.
	Open(ctx context.Context, src, dir string) (store.Store, error)
}

// Source is what Copy reads of a store, from one consistent snapshot.
type Source interface {
	// Budgets returns every budget, by key.
	Budgets(ctx context.Context) ([]store.Budget, error)
	// CronGroups returns every cron group, by name, with its entries.
	CronGroups(ctx context.Context) ([]store.CronGroup, error)
	// Jobs calls fn with every job, whole, by ID.
	Jobs(ctx context.Context, fn func(store.Job) error) error
	// Errors calls fn with every error record, by job ID and attempt.
	Errors(ctx context.Context, fn func(store.ErrorRecord) error) error
	// Holders returns the set of IDs of the jobs that hold their unique
	// key.
	Holders(ctx context.Context) (map[string]bool, error)
	// HighWater returns the greatest job ID the store ever held ("" if
	// none), deleted and purged jobs included.
	HighWater(ctx context.Context) (string, error)
}

// Backup writes an archive of what src holds to w: the database is built
// with body in a temporary directory first, so it needs temporary disk
// space for it.
func Backup(ctx context.Context, body Body, src Source, w io.Writer) error {
	at := time.Now()
	dir, err := os.MkdirTemp("", "zizq-backup-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(dir)
	path, err := body.Build(ctx, dir, func(dst store.Store) (string, error) {
		return Copy(ctx, src, dst)
	})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return Write(w, path, at)
}

// Restore copies everything of the backup at src (as Unpack takes it) into
// dst, an empty store, through body, and returns the backup's job-ID
// high-water mark, for dst to keep.
func Restore(ctx context.Context, body Body, src string, dst store.Store) (highWater string, err error) {
	dir, err := os.MkdirTemp("", "zizq-restore-*")
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(dir)
	in, err := body.Open(ctx, src, dir)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, in.Close()) }()
	mark, err := Copy(ctx, Reads(in), dst)
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	return mark, nil
}

// Copy appends everything src holds to dst, an empty store, as ops, and
// returns src's job-ID high-water mark (no op carries it). It returns once
// every op has committed.
func Copy(ctx context.Context, src Source, dst store.Store) (highWater string, err error) {
	c := &copier{ctx: ctx, dst: dst}
	config, err := configOps(ctx, src)
	if err != nil {
		return "", err
	}
	for _, o := range config {
		if err := c.add(o); err != nil {
			return "", err
		}
	}
	var keyed []string
	err = src.Jobs(ctx, func(j store.Job) error {
		if j.UniqueKey != "" {
			keyed = append(keyed, j.ID)
		}
		return c.add(store.InsertJob(j))
	})
	if err != nil {
		return "", fmt.Errorf("read jobs: %w", err)
	}
	if err := src.Errors(ctx, func(r store.ErrorRecord) error { return c.add(store.AddError(r)) }); err != nil {
		return "", fmt.Errorf("read error records: %w", err)
	}
	if err := copyHolders(ctx, src, keyed, c); err != nil {
		return "", err
	}
	if err := c.done(); err != nil {
		return "", err
	}
	return src.HighWater(ctx)
}

// configOps returns the ops that put src's budgets and cron groups.
func configOps(ctx context.Context, src Source) ([]store.Op, error) {
	budgets, err := src.Budgets(ctx)
	if err != nil {
		return nil, fmt.Errorf("read budgets: %w", err)
	}
	groups, err := src.CronGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cron groups: %w", err)
	}
	var ops []store.Op
	for _, b := range budgets {
		ops = append(ops, budgetOps(b)...)
	}
	for _, g := range groups {
		ops = append(ops, store.PutCronGroup(g))
		for _, e := range g.Entries {
			ops = append(ops, store.PutCronEntry(e))
		}
	}
	return ops, nil
}

// budgetOps returns the ops that put b: PutBudget writes its
// configuration only, so what a calendar budget spent follows it as a
// SpendBudget.
func budgetOps(b store.Budget) []store.Op {
	ops := []store.Op{store.PutBudget(b)}
	if b.Spent != nil {
		ops = append(ops, store.SpendBudget(b.Key, *b.Spent))
	}
	return ops
}

// copyHolders gives each unique key the holder src gives it. Inserting made
// each keyed job its key's holder in ID order; the holders are the
// engine's choice: release every key of a job that does not hold it, then
// hold the holders' (one holder per key at every step).
func copyHolders(ctx context.Context, src Source, keyed []string, c *copier) error {
	holders, err := src.Holders(ctx)
	if err != nil {
		return fmt.Errorf("read unique keys: %w", err)
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
	return nil
}

// copier appends ops to a store in groups of chunk, with at most one group
// waiting for its commit.
type copier struct {
	ctx  context.Context
	dst  store.Store
	ops  []store.Op
	last store.Pending
}

// add queues o; it fails when an earlier group failed to commit.
func (c *copier) add(o store.Op) error {
	c.ops = append(c.ops, o)
	if len(c.ops) < chunk {
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
