package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// compactTruncateWait bounds how long Compact's TRUNCATE checkpoint waits
// for readers to leave the WAL. An operator asked for it, so it waits far
// longer than the writer's own attempts (Maintenance.TruncateWait).
const compactTruncateWait = 5 * time.Second

// errWALBusy says a reader kept the WAL from being emptied.
var errWALBusy = errors.New("a reader kept the WAL in use")

// Compact returns every free page to the file system and empties the WAL,
// on the writer's connection between two transactions (writes appended
// meanwhile wait for it). A database that does not use incremental
// auto-vacuum (see convertAutoVacuum) is rewritten by a VACUUM instead.
func (db *DB) Compact(ctx context.Context) error {
	g := db.q.Enqueue(&group{Mode: db.opts.DefaultMode, Task: db.compactNow})
	if err := g.Wait(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// compactNow runs on the writer goroutine.
func (db *DB) compactNow() error {
	ctx := context.Background()
	full, err := db.applyFault()
	switch {
	case err != nil:
		return err
	case full:
		return errDiskFull
	}
	vacuum := "PRAGMA incremental_vacuum"
	if !db.maint.autoVacuum {
		vacuum = "VACUUM"
	}
	if _, err := db.w.conn.ExecContext(ctx, vacuum); err != nil {
		return fmt.Errorf("vacuum: %w", wrapUnavailable(err))
	}
	busy, err := db.checkpointTruncate(ctx, compactTruncateWait)
	if err != nil {
		return fmt.Errorf("wal checkpoint: %w", err)
	}
	if busy {
		return errWALBusy
	}
	return nil
}
