package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/groupcommit"
	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// errClosed answers appends made after Close.
var errClosed = fmt.Errorf("%w: database closed", store.ErrUnavailable)

// FileName is the name of the database file inside the data directory.
const FileName = "zizq.db"

// DefaultCacheSize is the default of Options.CacheSizeBytes (--cache-size):
// 8 MiB for all the connections together. Zizq's default is 256 MB; zizq's
// is smaller because the engine no longer holds payloads and the server is
// meant to hold a million queued jobs in 128 bytes of RSS each, page cache
// included. The cache serves the hot ends of the B-trees (new jobs, the
// front of each queue), which is all a fill or a drain touches: at 32 MiB
// a million queued jobs kept 10 MiB of pages, at 8 MiB 2, and a drain was
// as fast. The rest is the operating system's page cache's to keep.
const DefaultCacheSize = 8 << 20

const (
	// DefaultBatchSize is the default of Options.BatchSize
	// (--enqueue-batch-size).
	DefaultBatchSize = 1000
	// busyTimeoutMs bounds how long a connection waits for a lock held by
	// another process (or a checkpoint) before failing with SQLITE_BUSY.
	busyTimeoutMs = 10_000
)

// Options configure a DB.
type Options struct {
	// DefaultMode is the commit mode of every write.
	DefaultMode store.CommitMode
	// EnqueueMode is the commit mode of groups that insert jobs (and so of
	// everything appended in the same group). It replaces DefaultMode for
	// them, even when weaker: set both alike when there is no override. A
	// transaction commits in the strongest mode of the groups it holds.
	EnqueueMode store.CommitMode
	// MarkDelay is the longest a dispatch mark (store.DispatchMark) is
	// held back (lazy.go). 0 means DefaultMarkDelay; negative, none is.
	MarkDelay time.Duration
	// BatchSize bounds the ops of one transaction (group commit); a single
	// larger group still commits in one transaction. 0 means 1000.
	BatchSize int
	// CacheSizeBytes bounds SQLite's page cache of all the DB's
	// connections together (see cacheShare). Caches fill only as pages
	// are used. 0 means DefaultCacheSize.
	CacheSizeBytes int64
	// Logger receives the writer's failures; nil means slog.Default().
	Logger *slog.Logger

	// OnCommit, when set, is called by the writer goroutine after each
	// transaction, once its waiters are woken; it must be quick.
	OnCommit func(CommitInfo)
	// Maintenance tunes WAL checkpoints and vacuuming (checkpoint.go).
	Maintenance Maintenance

	// plainWrites, in tests, applies each op by itself: no coalescing, no
	// runs, no held marks (the oracle of the commit-group tests).
	plainWrites bool
	// startGate, when set, holds the writer back until it is closed, so
	// tests can queue several groups for one batch.
	startGate chan struct{}
	// now, when set, is the clock of the storage care's schedule (tests
	// step it to make maintenance fall due); nil means time.Now.
	now func() time.Time
}

// DB is zizq's durable store. Writes go through Append to one writer
// goroutine that owns the only writing connection; reads use a separate
// read-only pool and run concurrently with writes (WAL).
type DB struct {
	opts Options
	log  *slog.Logger

	w       *writer
	wdb     *sql.DB // holds the writer's connection
	rdb     *sql.DB // read-only pool
	readers int     // the read pool's size
	read    readStmts

	// q is the write queue; its writer goroutine is the only one to use w.
	q *groupcommit.Queue[op]
	// highWater is the greatest job ID this store has committed or read
	// from the meta table at open (the writer's mark, for Load), under
	// highWaterMu.
	highWaterMu sync.Mutex
	highWater   string

	closeOnce sync.Once
	closeErr  error

	snapshotMu sync.Mutex // one snapshot's connection at a time (backup.go)

	ckpt     *checkpointer // copies the WAL beside the writer, on the read pool (checkpointer.go)
	restarts atomic.Int64  // the writer's restart checkpoints (tests, diagnostics)

	txs    atomic.Int64 // transactions attempted by the writer (tests, diagnostics)
	dir    string       // the data directory
	path   string       // absolute path of the database file
	maint  maintState   // storage care; the writer goroutine's own (checkpoint.go)
	held   heldMarks    // dispatch marks held back; the writer goroutine's own (lazy.go)
	faults faults       // a simulated storage failure (SimulateFault)
}

// Open opens (creating if needed) the database dir/zizq.db, migrates its
// schema and starts the writer.
func Open(ctx context.Context, dir string, opts Options) (_ *DB, err error) {
	if opts.MarkDelay == 0 {
		opts.MarkDelay = DefaultMarkDelay
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.CacheSizeBytes <= 0 {
		opts.CacheSizeBytes = DefaultCacheSize
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dir, FileName))
	if err != nil {
		return nil, fmt.Errorf("database path: %w", err)
	}

	db := &DB{
		dir:     dir,
		path:    path,
		opts:    opts,
		log:     log,
		readers: max(4, runtime.GOMAXPROCS(0)),
	}
	db.q = groupcommit.New[op](writerWork{db}, opts.BatchSize, errClosed)
	defer func() {
		if err != nil {
			db.closeConns()
		}
	}()

	db.wdb, err = sql.Open("sqlite", dsn(path, db.cacheShare(), false))
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.wdb.SetMaxOpenConns(1)
	conn, err := db.wdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", wrapUnavailable(err))
	}
	db.w = &writer{conn: conn}
	if err := setAutoVacuum(ctx, conn); err != nil {
		return nil, err
	}
	if err := setWAL(ctx, conn); err != nil {
		return nil, err
	}
	if err := migrate(ctx, conn, log); err != nil {
		return nil, err
	}
	if err := db.initMaintenance(ctx, conn); err != nil {
		return nil, err
	}
	// The checkpointer copies the WAL; no commit of the writer waits on it.
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		return nil, fmt.Errorf("turn off automatic checkpoints: %w", wrapUnavailable(err))
	}
	// Refresh the planner's statistics where they are missing or stale, as
	// SQLite recommends for long-lived connections; bounded work.
	if _, err := conn.ExecContext(ctx, "PRAGMA analysis_limit = 400; PRAGMA optimize = 0x10002"); err != nil {
		log.Warn("database optimize failed", "err", err)
	}
	if err := db.w.prepare(ctx, opts.DefaultMode); err != nil {
		return nil, err
	}

	db.rdb, err = sql.Open("sqlite", dsn(path, db.cacheShare(), true))
	if err != nil {
		return nil, fmt.Errorf("open read pool: %w", err)
	}
	db.rdb.SetMaxOpenConns(db.readers)
	db.rdb.SetMaxIdleConns(db.readers)
	if err := db.read.prepare(ctx, db.rdb); err != nil {
		return nil, err
	}
	db.ckpt = startCheckpointer(db.rdb, db.maint.cfg, log)

	go db.run()
	return db, nil
}

// cacheShare is the page cache size of each connection: CacheSizeBytes
// split evenly between the writer, the read pool's connections and the one
// a backup opens. SQLite's caches of one process share their pages, a busy
// one taking the pages of idle ones, up to the sum of their sizes: so the
// sum is the bound, wherever the pages are needed. (Before, each
// connection was given the whole, and the writer's cache grew towards it
// while it filled the database.)
func (db *DB) cacheShare() int64 {
	return db.opts.CacheSizeBytes / int64(db.readers+2)
}

// dsn builds the driver's connection string: a file: URI (so any path is
// safe) with the pragmas every connection needs.
func dsn(path string, cacheBytes int64, readOnly bool) string {
	// A relative path would be written file://dir/…, whose first
	// directory SQLite reads as the URI's authority and refuses.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMs)+")")
	q.Add("_pragma", "cache_size(-"+strconv.FormatInt(max(cacheBytes/1024, 1), 10)+")")
	q.Add("_pragma", "temp_store(memory)")
	// Truncate the WAL after a checkpoint that follows a burst of writes.
	q.Add("_pragma", "journal_size_limit(67108864)")
	if readOnly {
		// query_only rather than mode=ro: a mode=ro connection cannot
		// always open a WAL database whose -shm it may not create.
		q.Add("_pragma", "query_only(1)")
	}
	return u.String() + "?" + q.Encode()
}

// setWAL switches the database to WAL mode and checks that it took: some
// file systems (and in-memory databases) silently keep another mode.
func setWAL(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("set journal mode: %w", wrapUnavailable(err))
	}
	if mode != "wal" {
		return fmt.Errorf("set journal mode: database is in %q mode, want wal", mode)
	}
	return nil
}

// JournalMode returns the database's journal mode as a reader sees it
// ("wal").
func (db *DB) JournalMode(ctx context.Context) (string, error) {
	var mode string
	if err := db.rdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return "", fmt.Errorf("journal mode: %w", err)
	}
	return mode, nil
}

// Close stops accepting appends, commits everything already appended and
// closes the connections. Appends made after Close fail with ErrUnavailable.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.q.Close()
		db.closeErr = db.closeConns()
	})
	return db.closeErr
}

// closeConns closes the checkpointer and the read pool before the
// writer's connection, so the writer's is the last one and SQLite
// checkpoints and removes the WAL.
func (db *DB) closeConns() error {
	var errs []error
	if db.ckpt != nil {
		db.ckpt.close()
	}
	if db.rdb != nil {
		db.read.close()
		errs = append(errs, db.rdb.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.close())
	}
	if db.wdb != nil {
		errs = append(errs, db.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// unavailableReason returns the reason a SQLite error makes storage
// unavailable, or "" when err is not such an error.
func unavailableReason(err error) string {
	var se *driver.Error
	if !errors.As(err, &se) {
		return ""
	}
	// Extended result codes are on: the primary code is the low byte.
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return "database or disk is full"
	case sqlite3.SQLITE_READONLY:
		return "attempt to write a readonly database"
	case sqlite3.SQLITE_IOERR:
		return "disk I/O error"
	case sqlite3.SQLITE_CANTOPEN:
		return "unable to open database file"
	}
	return ""
}

// wrapUnavailable turns a full-disk, read-only or I/O error into an
// ErrUnavailable with the reason; other errors pass through unchanged.
func wrapUnavailable(err error) error {
	if reason := unavailableReason(err); reason != "" {
		return fmt.Errorf("%w: %s", store.ErrUnavailable, reason)
	}
	return err
}

// wrapWrite adds context to a write error. Unavailable errors are returned
// bare ("storage unavailable: <reason>"): that text is what clients see.
func wrapWrite(what string, err error) error {
	if reason := unavailableReason(err); reason != "" {
		return fmt.Errorf("%w: %s", store.ErrUnavailable, reason)
	}
	return fmt.Errorf("%s: %w", what, err)
}

var _ store.Store = (*DB)(nil)
