package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// The checkpointer copies the WAL into the database file beside the
// writer, on a connection it borrows from the read pool for each pass (a
// checkpoint writes no rows, so query_only does not stop it; a connection
// of its own would cost about 1.5 MiB of memory).
//
// A checkpoint run by the writer (SQLite's automatic one after a commit
// that leaves the WAL over 1,000 pages, or the writer's own) holds up
// every write behind it while it copies pages and syncs two files. Under a
// sustained load that is a fifth of the writer's time: a bulk enqueue of
// 400,000 jobs went from 128,000 to 157,000 jobs/s with no checkpoint at
// all (BENCHMARKS.md). A PASSIVE checkpoint on another connection takes
// only the checkpoint lock, so it runs while the writer commits.
//
// What the checkpointer cannot do is restart the WAL: SQLite writes from
// the WAL's beginning again only when a write transaction begins with
// every frame copied, and under a steady load a commit always lands while
// a checkpoint runs. So once a pass finds the WAL over
// Maintenance.RestartPages, the checkpointer stands aside (it runs no pass
// until the writer has checkpointed), the writer checkpoints what is left
// after its next commit (the frames of the commits since that pass began),
// and the writer's next transaction restarts the WAL. The writer's
// once-a-second care (checkpoint.go) stays as it was and bounds the WAL
// when the checkpointer fails.
type checkpointer struct {
	pool *sql.DB // the read pool
	log  *slog.Logger
	pace time.Duration // the least time between two passes

	ctx    context.Context // ends at close, so that no pass waits on the pool
	cancel context.CancelFunc
	kick   chan struct{} // a commit wrote to the WAL; holds one
	stop   chan struct{}
	done   chan struct{} // closed when the loop has returned

	// restartPages is Maintenance.RestartPages; restartDue is set by a
	// pass that found the WAL at least that long, and cleared by the
	// writer's checkpoint. While it is set the checkpointer runs no pass,
	// so that the writer's checkpoint never finds the lock taken.
	restartPages int64
	restartDue   atomic.Bool

	// mu is held by each checkpoint of the store, the checkpointer's and
	// the writer's: SQLite lets one run at a time and answers any other
	// "busy" at once, which would cost a TRUNCATE its turn.
	mu sync.Mutex

	passes  atomic.Int64 // passes run (tests, diagnostics)
	failing bool         // the last pass failed (logged once per streak)
}

// startCheckpointer starts the checkpointer's loop over the read pool.
func startCheckpointer(pool *sql.DB, cfg Maintenance, log *slog.Logger) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{pool: pool, log: log, pace: cfg.CheckpointPace, restartPages: int64(cfg.RestartPages),
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// wrote tells the checkpointer that a commit wrote to the WAL. It never
// blocks.
func (c *checkpointer) wrote() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	pace := time.NewTimer(0)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		if c.restartDue.Load() {
			continue // the writer's turn; a later commit kicks again
		}
		c.pass()
		pace.Reset(c.pace)
		select {
		case <-c.stop:
			return
		case <-pace.C:
		}
	}
}

// pass runs one PASSIVE checkpoint and records the WAL's length.
func (c *checkpointer) pass() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passes.Add(1)
	_, walPages, err := passiveCheckpoint(c.ctx, c.pool)
	switch {
	case c.ctx.Err() != nil:
		return // closing
	case err != nil && !c.failing:
		c.log.Warn("wal checkpoint failed; the writer checkpoints meanwhile", "err", err)
		c.failing = true
	case err == nil && c.failing:
		c.log.Info("wal checkpoints work again")
		c.failing = false
	}
	if err == nil && walPages >= c.restartPages {
		c.restartDue.Store(true)
	}
}

// close stops the loop, waiting for a pass under way.
func (c *checkpointer) close() {
	c.cancel()
	close(c.stop)
	<-c.done
}

// rowQuerier is a connection or a pool.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// passiveCheckpoint runs a PASSIVE checkpoint on q: busy when another
// checkpoint held the lock, and the WAL's length in pages.
func passiveCheckpoint(ctx context.Context, q rowQuerier) (busy bool, walPages int64, err error) {
	var b, copied int64
	err = q.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&b, &walPages, &copied)
	return b != 0, walPages, err
}

// writerCheckpoint runs the writer's PASSIVE checkpoint. When wait, it
// waits for a pass of the checkpointer's under way; else it leaves the
// copying to that pass. One that ran clears a restart a pass asked for:
// the writer's next transaction writes the WAL from its beginning.
func (db *DB) writerCheckpoint(wait bool) error {
	c := db.ckpt
	if wait {
		c.mu.Lock()
	} else if !c.mu.TryLock() {
		return nil // the checkpointer is copying the WAL
	}
	defer c.mu.Unlock()
	busy, _, err := passiveCheckpoint(context.Background(), db.w.conn)
	if err != nil {
		return wrapUnavailable(err)
	}
	if !busy && c.restartDue.Swap(false) {
		db.restarts.Add(1)
	}
	return nil
}

// restartWAL runs the writer's checkpoint of what the checkpointer has not
// copied yet, when a pass asked for it. One that could not run (another
// connection's checkpoint holds the lock, or the disk fails) is tried
// again after the next commit.
func (db *DB) restartWAL() {
	if !db.ckpt.restartDue.Load() {
		return
	}
	if err := db.writerCheckpoint(true); err != nil {
		db.log.Debug("wal restart checkpoint failed", "err", err)
	}
}
