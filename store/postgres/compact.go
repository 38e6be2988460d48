package postgres

import (
	"context"
	"fmt"
	"time"
)

// compactLockWait bounds how long Compact waits for the exclusive lock of
// each table it rewrites. Every query of those tables queues behind a
// waiting VACUUM FULL, so a long reader (a backup) must fail the
// compaction, not stall the queue.
const compactLockWait = 5 * time.Second

// compactTables are the tables where deleted and purged jobs leave space.
// The lease's table is left alone: its lock would hold up the cluster's
// renewals.
const compactTables = `jobs, job_errors`

// Compact rewrites the jobs' tables with VACUUM FULL, which gives the
// space of deleted and purged rows back to the file system (a plain VACUUM,
// autovacuum's, only makes it reusable), then measures Sizes again. It runs
// between two write transactions: writes appended meanwhile wait for it,
// and reads of those tables wait for the rewrite, which copies the live
// rows only. The WAL is the cluster's: nothing of it is the store's to
// empty.
func (db *DB) Compact(ctx context.Context) error {
	g := db.enqueue(&group{db: db, mode: db.opts.DefaultMode, task: func() error { return db.compactNow(ctx) }})
	if err := g.Wait(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// compactNow runs on the writer goroutine.
func (db *DB) compactNow(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return wrapConn(err)
	}
	defer conn.Release()
	// The setting is the session's: a connection that cannot reset it
	// goes, rather than back to the pool with it.
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", compactLockWait.Milliseconds())); err != nil {
		return wrapConn(err)
	}
	defer func() {
		if _, err := conn.Exec(context.Background(), "RESET lock_timeout"); err != nil {
			_ = conn.Conn().Close(context.Background())
		}
	}()
	if _, err := conn.Exec(ctx, "VACUUM (FULL, ANALYZE) "+compactTables); err != nil {
		return fmt.Errorf("vacuum: %w", wrapConn(err))
	}
	db.measureSizes(ctx)
	return nil
}
