package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// compactLockWait bounds how long Compact waits for the exclusive lock of
// each table it rewrites. Every query of those tables queues behind a
// waiting VACUUM FULL, so a long reader (a backup) must fail the
// compaction, not stall the queue.
const compactLockWait = 5 * time.Second

// compactSnapshotWait bounds how long Compact waits for the older
// transactions: while one of them runs, the rows it may still see (deleted
// jobs among them) cannot be removed.
const compactSnapshotWait = 5 * time.Second

// errOldSnapshot says an older transaction kept deleted rows from going.
var errOldSnapshot = errors.New("a transaction older than the compaction kept deleted rows in use")

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
//
// Rows deleted while an older transaction of the database runs cannot be
// removed yet (PostgreSQL keeps what any snapshot may see), so Compact
// first waits a while for the older transactions, of any backend (an
// autovacuum worker's ANALYZE holds a snapshot too, and on a busy database
// one is often running); if one is still there it compacts what it can
// and says so.
// Only the transactions it may see count: a role without pg_read_all_stats
// sees its own sessions alone.
func (db *DB) Compact(ctx context.Context) error {
	g := db.q.Enqueue(&group{Mode: db.opts.DefaultMode, Task: func() error { return db.compactNow(ctx) }})
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
	gone, err := waitOlderTransactions(ctx, conn)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "VACUUM (FULL, ANALYZE) "+compactTables); err != nil {
		return fmt.Errorf("vacuum: %w", wrapConn(err))
	}
	db.measureSizes(ctx)
	if !gone {
		return errOldSnapshot
	}
	return nil
}

// waitOlderTransactions waits, at most compactSnapshotWait, until no other
// backend of the database holds back the removal of rows deleted before
// the call, and reports whether none does. Two things hold it back: a
// snapshot whose xmin is older than the call's (a snapshot taken later
// can still be that old while an older transaction runs), and a running
// transaction's own xid, which an idle transaction that has written keeps
// though it holds no snapshot between its statements. Both are compared
// with the first xid not yet assigned at the call, by age, which is
// measured from one point within each query.
func waitOlderTransactions(ctx context.Context, conn *pgxpool.Conn) (bool, error) {
	var horizon string
	if err := conn.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::xid::text").Scan(&horizon); err != nil {
		return false, wrapConn(err)
	}
	deadline := time.Now().Add(compactSnapshotWait)
	for {
		var older bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
				AND (age(backend_xmin) > age($1::xid) OR age(backend_xid) > age($1::xid)))`,
			horizon).Scan(&older)
		switch {
		case err != nil:
			return false, wrapConn(err)
		case !older:
			return true, nil
		case time.Now().After(deadline):
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
