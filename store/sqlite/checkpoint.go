package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/zizq/zizq/store"
)

// Storage care. The WAL is copied into the database file by the
// checkpointer, beside the writer on a connection of the read pool
// (checkpointer.go; the writer's connection has SQLite's automatic
// checkpoint turned off, so that no commit waits on one). That is not
// enough for a server that runs for years:
//
//   - A checkpoint can only restart the WAL from its beginning when no
//     reader uses it. Under a steady load with overlapping reads, or while
//     one long reader (a backup, a slow listing) holds a snapshot, that
//     moment never comes and the WAL grows without bound. The writer
//     therefore checkpoints on its own schedule, and once the WAL is over
//     Maintenance.WALTruncateBytes it tries a TRUNCATE checkpoint, which
//     waits briefly for readers to move on and then empties the WAL file.
//   - Purged and deleted jobs leave free pages that SQLite reuses but never
//     returns to the file system. The database uses auto_vacuum=INCREMENTAL
//     and the writer returns free pages in bounded steps.
//
// All of it runs on the writer goroutine, between transactions: the only
// connection that writes rows is never shared, and no write waits on
// maintenance for longer than one bounded step.

// Maintenance tunes the writer's storage care; zero values take defaults.
type Maintenance struct {
	// Interval is how often the writer checkpoints the WAL (PASSIVE) and
	// returns free pages while there are writes. 0 means 1s.
	Interval time.Duration
	// WALTruncateBytes is the WAL size past which the writer tries a
	// TRUNCATE checkpoint. 0 means 64 MiB.
	WALTruncateBytes int64
	// TruncateWait bounds how long a TRUNCATE checkpoint waits for readers
	// (writes wait meanwhile). 0 means 200ms.
	TruncateWait time.Duration
	// VacuumPages is how many free pages are returned to the file system
	// per step, once at least that many are free. 0 means 1024.
	VacuumPages int
	// CheckpointPace is the least time between two of the checkpointer's
	// passes. 0 means 20ms.
	CheckpointPace time.Duration
	// RestartPages is the WAL's length, in pages, past which the writer
	// checkpoints what the checkpointer has not copied yet, so that the
	// WAL restarts from its beginning. 0 means 1024 (4 MiB of 4 KiB
	// pages, the length SQLite's automatic checkpoint keeps it to; 4096
	// enqueued no faster and held 1.5 MiB more at 1M queued jobs).
	RestartPages int
}

const (
	defaultMaintInterval    = time.Second
	defaultWALTruncateBytes = 64 << 20
	defaultTruncateWait     = 200 * time.Millisecond
	defaultVacuumPages      = 1024
	defaultCheckpointPace   = 20 * time.Millisecond
	defaultRestartPages     = 1024
	// maxTruncateBackoff bounds the pause after TRUNCATE checkpoints that
	// found a reader in the way: a failed attempt stalls writes for up to
	// TruncateWait, so at most 4% of the time by default, and the WAL grows
	// by at most this long's writes past its bound once readers let go.
	maxTruncateBackoff = 5 * time.Second
	// autoVacuumConvertMax is the largest database converted to incremental
	// auto-vacuum at open (a one-time VACUUM, which rewrites the file).
	// Larger ones are left as they are; see convertAutoVacuum.
	autoVacuumConvertMax = 256 << 20
)

// CommitInfo describes one transaction of the writer, for OnCommit.
type CommitInfo = store.CommitInfo

// maintState is the writer's storage-care bookkeeping; only the writer
// goroutine (and Open, before it starts) touches it.
type maintState struct {
	cfg        Maintenance
	dirty      bool // commits since the last checkpoint
	last       time.Time
	autoVacuum bool // the database uses auto_vacuum=INCREMENTAL
	failing    bool // the last maintenance failed (logged once per streak)

	truncateAfter   time.Time // no TRUNCATE attempt before this
	truncateBackoff time.Duration

	// highWater is the greatest job ID ever inserted, saved to the meta
	// table so IDs keep increasing after every job is gone.
	highWater, savedHighWater string

	timer *time.Timer
}

func (m *maintState) init(cfg Maintenance) {
	if cfg.Interval <= 0 {
		cfg.Interval = defaultMaintInterval
	}
	if cfg.WALTruncateBytes <= 0 {
		cfg.WALTruncateBytes = defaultWALTruncateBytes
	}
	if cfg.TruncateWait <= 0 {
		cfg.TruncateWait = defaultTruncateWait
	}
	if cfg.VacuumPages <= 0 {
		cfg.VacuumPages = defaultVacuumPages
	}
	if cfg.CheckpointPace <= 0 {
		cfg.CheckpointPace = defaultCheckpointPace
	}
	if cfg.RestartPages <= 0 {
		cfg.RestartPages = defaultRestartPages
	}
	m.cfg = cfg
}

// setAutoVacuum asks for incremental auto-vacuum. It takes effect only on a
// new database (before its first table); older ones are converted by
// convertAutoVacuum.
func setAutoVacuum(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", wrapUnavailable(err))
	}
	return nil
}

// initMaintenance runs after the migrations: it converts a database made
// without incremental auto-vacuum, loads the saved ID high-water mark and
// removes snapshot files a crash left behind.
func (db *DB) initMaintenance(ctx context.Context, conn *sql.Conn) error {
	db.maint.init(db.opts.Maintenance)
	removeStaleSnapshots(db.dir)
	if err := db.convertAutoVacuum(ctx, conn); err != nil {
		return err
	}
	var hw string
	err := conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'id_high_water'`).Scan(&hw)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read id high-water mark: %w", err)
	}
	db.maint.highWater, db.maint.savedHighWater, db.highWater = hw, hw, hw
	return nil
}

// convertAutoVacuum switches a database created without incremental
// auto-vacuum (by zizq before schema 2) to it, with a one-time VACUUM. A
// large database is left as it is, with a warning: a VACUUM rewrites the
// whole file through the WAL and needs as much free disk again. Its free
// pages are still reused, and a backup restored with `zizq restore` is
// converted (the restored file is small enough, or converted offline).
func (db *DB) convertAutoVacuum(ctx context.Context, conn *sql.Conn) error {
	mode, err := pragmaInt(ctx, conn, "auto_vacuum")
	if err != nil {
		return err
	}
	if mode == 2 {
		db.maint.autoVacuum = true
		return nil
	}
	size, _ := fileSize(db.path)
	if size > autoVacuumConvertMax {
		db.log.Warn("database does not use incremental auto-vacuum: space freed by purges is reused but not returned to the file system",
			"bytes", size)
		return nil
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", wrapUnavailable(err))
	}
	if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
		// Not fatal: the database works as before, it just keeps its size.
		db.log.Warn("could not convert the database to incremental auto-vacuum", "err", err)
		return nil
	}
	if mode, err = pragmaInt(ctx, conn, "auto_vacuum"); err != nil {
		return err
	}
	db.maint.autoVacuum = mode == 2
	db.log.Info("database converted to incremental auto-vacuum", "bytes", size)
	return nil
}

func pragmaInt(ctx context.Context, conn *sql.Conn, name string) (int64, error) {
	var v int64
	if err := conn.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return v, nil
}

// noteCommit records what a finished batch means for maintenance (the WAL
// has grown, inserted IDs may raise the high-water mark) and returns the
// batch's figures. It runs before the batch's waiters wake (and its ops
// are dropped), so that Load sees the mark of every commit they were told of.
func (db *DB) noteCommit(batch []*group, d time.Duration) CommitInfo {
	info := CommitInfo{Groups: len(batch), Duration: d}
	m := &db.maint
	before := m.highWater
	for _, p := range batch {
		info.Ops += len(p.Ops)
		if p.Err != nil {
			info.Failed = true
			continue
		}
		m.dirty = true
		for i := range p.Ops {
			if op := &p.Ops[i]; op.kind == opInsertJob {
				info.Inserts++
				m.highWater = max(m.highWater, op.id)
			}
		}
	}
	if m.highWater != before {
		db.highWaterMu.Lock()
		db.highWater = m.highWater
		db.highWaterMu.Unlock()
	}
	return info
}

// maintenanceDue reports whether there is storage care to do, and from when.
func (db *DB) maintenanceDue() (time.Time, bool) {
	m := &db.maint
	if !m.dirty && m.highWater == m.savedHighWater {
		return time.Time{}, false
	}
	return m.last.Add(m.cfg.Interval), true
}

// maintain does the storage care that is due. Failures are logged (nobody
// waits for them) and tried again at the next interval.
func (db *DB) maintain(now time.Time) {
	due, ok := db.maintenanceDue()
	if !ok || now.Before(due) {
		return
	}
	m := &db.maint
	m.last = now
	var errs []error
	if err := db.saveHighWater(); err != nil {
		errs = append(errs, fmt.Errorf("save id high-water mark: %w", err))
	}
	more, err := db.vacuumStep()
	if err != nil {
		errs = append(errs, fmt.Errorf("incremental vacuum: %w", err))
	}
	if err := db.checkpoint(now); err != nil {
		errs = append(errs, fmt.Errorf("wal checkpoint: %w", err))
	} else {
		// A vacuum step wrote to the WAL, and more free pages may remain:
		// come back at the next interval even if nothing else is written.
		m.dirty = more
	}
	// A full disk fails every attempt: say so once, and once it is over.
	switch err := errors.Join(errs...); {
	case err != nil && !m.failing:
		db.log.Warn("storage maintenance failed; retrying every interval", "err", err)
		m.failing = true
	case err == nil && m.failing:
		db.log.Info("storage maintenance works again")
		m.failing = false
	}
}

// saveHighWater writes the greatest inserted job ID to the meta table, if it
// grew.
func (db *DB) saveHighWater() error {
	m := &db.maint
	if m.highWater == m.savedHighWater {
		return nil
	}
	_, err := db.w.conn.ExecContext(context.Background(), `INSERT INTO meta (key, value) VALUES ('id_high_water', ?1)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE excluded.value > meta.value`, m.highWater)
	if err != nil {
		return wrapUnavailable(err)
	}
	m.savedHighWater = m.highWater
	return nil
}

// vacuumStep returns up to VacuumPages free pages to the file system once
// that many are free: a bounded step, so writes never wait long for it. It
// reports whether it did anything (the file shrinks at the checkpoint that
// follows).
func (db *DB) vacuumStep() (bool, error) {
	m := &db.maint
	if !m.autoVacuum {
		return false, nil
	}
	ctx := context.Background()
	free, err := pragmaInt(ctx, db.w.conn, "freelist_count")
	if err != nil {
		return false, err
	}
	if free < int64(m.cfg.VacuumPages) {
		return false, nil
	}
	_, err = db.w.conn.ExecContext(ctx, "PRAGMA incremental_vacuum("+strconv.Itoa(m.cfg.VacuumPages)+")")
	return err == nil, wrapUnavailable(err)
}

// checkpoint runs a PASSIVE checkpoint, or a TRUNCATE one when the WAL has
// grown past its bound. A TRUNCATE waits at most TruncateWait for readers;
// when one is still in the way, later attempts back off (up to 5s) so that
// a long reader does not stall writes again and again.
func (db *DB) checkpoint(now time.Time) error {
	m := &db.maint
	ctx := context.Background()
	wal, _ := fileSize(db.path + "-wal")
	if wal <= m.cfg.WALTruncateBytes || now.Before(m.truncateAfter) {
		return db.writerCheckpoint(false)
	}
	busy, err := db.checkpointTruncate(ctx, m.cfg.TruncateWait)
	if err != nil {
		return err
	}
	if busy {
		m.truncateBackoff = min(max(2*m.truncateBackoff, m.cfg.Interval), maxTruncateBackoff)
		m.truncateAfter = now.Add(m.truncateBackoff)
		db.log.Debug("wal truncate checkpoint waited for a reader; trying later", "wal_bytes", wal, "retry_in", m.truncateBackoff)
		return nil
	}
	m.truncateBackoff, m.truncateAfter = 0, time.Time{}
	return nil
}

// checkpointTruncate runs a TRUNCATE checkpoint that waits at most wait
// for readers and reports whether a reader kept it from finishing. A pass
// of the checkpointer's under way ends first.
func (db *DB) checkpointTruncate(ctx context.Context, d time.Duration) (busy bool, err error) {
	db.ckpt.mu.Lock()
	defer db.ckpt.mu.Unlock()
	conn := db.w.conn
	wait := d.Milliseconds()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(max(wait, 1), 10)); err != nil {
		return false, wrapUnavailable(err)
	}
	defer func() {
		if _, e := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.Itoa(busyTimeoutMs)); e != nil && err == nil {
			err = wrapUnavailable(e)
		}
	}()
	var b, logPages, done int64
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&b, &logPages, &done); err != nil {
		return false, wrapUnavailable(err)
	}
	return b != 0, nil
}

// idle waits for wake while the queue is empty, running storage care when
// it falls due.
func (db *DB) idle(wake <-chan struct{}) {
	due, ok := db.maintenanceDue()
	if marks, held := db.nextDue(); held && (!ok || marks.Before(due)) {
		db.idleForMarks(marks, wake)
		return
	}
	if !ok {
		<-wake
		return
	}
	d := due.Sub(db.now())
	if d <= 0 {
		db.maintain(db.now())
		return
	}
	m := &db.maint
	if m.timer == nil {
		m.timer = time.NewTimer(d)
	} else {
		m.timer.Reset(d)
	}
	select {
	case <-wake:
		m.timer.Stop()
	case <-m.timer.C:
		db.maintain(db.now())
	}
}

// idleForMarks waits for work or until the held dispatch marks fall due,
// then writes them.
func (db *DB) idleForMarks(due time.Time, wake <-chan struct{}) {
	d := due.Sub(db.now())
	if d > 0 {
		h := &db.held
		if h.timer == nil {
			h.timer = time.NewTimer(d)
		} else {
			h.timer.Reset(d)
		}
		select {
		case <-wake:
			h.timer.Stop()
			return
		case <-h.timer.C:
		}
	}
	db.flushMarks()
}

// now is the time on the storage care's clock.
func (db *DB) now() time.Time {
	if db.opts.now != nil {
		return db.opts.now()
	}
	return time.Now()
}

// finalMaintenance runs as the writer exits: the high-water mark is saved so
// that IDs keep increasing after a restart. Closing the last connection
// then checkpoints and removes the WAL.
func (db *DB) finalMaintenance() {
	if err := db.saveHighWater(); err != nil {
		db.log.Warn("save id high-water mark failed", "err", err)
	}
}

// Sizes returns the sizes in bytes of the database file and of its WAL (0
// when there is none). It reads file metadata only: no lock, no query.
func (db *DB) Sizes() (dbBytes, walBytes int64) {
	dbBytes, _ = fileSize(db.path)
	walBytes, _ = fileSize(db.path + "-wal")
	return dbBytes, walBytes
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
