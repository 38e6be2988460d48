package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/archive"
	"github.com/zizq/zizq/store/internal/groupcommit"
)

const (
	// DefaultBatchSize is the default of Options.BatchSize
	// (--enqueue-batch-size).
	DefaultBatchSize = 1000
	// DefaultMaxConns bounds the pool: the writer's connection, the reads
	// of the API, a backup and the lease's renewals.
	DefaultMaxConns = 8
	// sizesInterval is how often Sizes' figures are measured.
	sizesInterval = 10 * time.Second
)

// ErrFenced is wrapped by the writes of a leader that lost its lease: its
// transactions fail before they change anything (see Fence). It wraps
// store.ErrUnavailable, so clients see 503.
var ErrFenced = fmt.Errorf("%w: this server is no longer the leader", store.ErrUnavailable)

// errClosed answers appends made after Close.
var errClosed = fmt.Errorf("%w: database closed", store.ErrUnavailable)

// Fence is the lease a leader's writes are fenced with: every write
// transaction first checks, in the transaction, that Holder still holds
// the lease at Term and that it has not expired (zizq_fence).
type Fence struct {
	Holder string
	Term   int64
	// Lease is the lease's duration (0: 10 s): the database ends a write
	// transaction left idle for FrozenTxLimit of it.
	Lease time.Duration
}

// Options configure a DB.
type Options struct {
	// URL is the PostgreSQL connection string (postgres://… or key=value).
	URL string
	// DefaultMode is the commit mode of every write; EnqueueMode that of
	// groups that insert jobs (set both alike when there is no override).
	// A transaction commits in the strongest mode of the groups it holds:
	// Buffered is synchronous_commit = off, Fsync on.
	DefaultMode, EnqueueMode store.CommitMode
	// BatchSize bounds the ops of one transaction (group commit); a single
	// larger group still commits in one transaction. 0 means 1000.
	BatchSize int
	// MaxConns bounds the connection pool; 0 means DefaultMaxConns.
	MaxConns int32
	// Fence, when set, fences every write transaction with a leader's
	// lease. Without it writes are not fenced (a single server, tools).
	Fence *Fence
	// Logger receives the writer's failures; nil means slog.Default().
	Logger *slog.Logger
	// OnCommit, when set, is called by the writer goroutine after each
	// transaction, once its waiters are woken; it must be quick.
	OnCommit func(store.CommitInfo)
	// Archive makes and reads the database of backups (Backup, Restore):
	// sqlite.ArchiveBody{}, the one of zizq's format. Without it Backup
	// and Restore fail.
	Archive archive.Body
}

// DB is zizq's store on PostgreSQL. Writes go through Append to one writer
// goroutine that commits many groups in one transaction of batched
// statements; reads use the pool and run beside it.
type DB struct {
	opts Options
	log  *slog.Logger
	pool *pgxpool.Pool

	q *groupcommit.Queue[store.Op] // the write queue and its writer

	stopSizes context.CancelFunc
	sizesDone chan struct{}
	closeOnce sync.Once

	txs      atomic.Int64 // transactions attempted (tests)
	dbBytes  atomic.Int64 // last measured size of the store's tables
	walBytes atomic.Int64
}

// Open connects to the database, migrates its schema and starts the
// writer.
func Open(ctx context.Context, opts Options) (_ *DB, err error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	pool, err := NewPool(ctx, opts.URL, opts.MaxConns, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			pool.Close()
		}
	}()
	if err := migrate(ctx, pool, log); err != nil {
		return nil, err
	}
	db := &DB{
		opts: opts, log: log, pool: pool,
		sizesDone: make(chan struct{}),
	}
	db.q = groupcommit.New[store.Op](writerWork{db}, opts.BatchSize, errClosed)
	db.measureSizes(ctx)
	sizesCtx, stop := context.WithCancel(context.Background())
	db.stopSizes = stop
	go db.runSizes(sizesCtx)
	go db.q.Run()
	return db, nil
}

// defaultFenceLease is the lease of a Fence that does not say (the
// cluster's default --lease).
const defaultFenceLease = 10 * time.Second

// idleLimit is how long the database lets a write transaction fenced by
// f sit idle.
func (f *Fence) idleLimit() time.Duration {
	lease := f.Lease
	if lease <= 0 {
		lease = defaultFenceLease
	}
	return FrozenTxLimit(lease)
}

// NewPool connects a pool to url, with params set on every connection,
// and checks that the database answers.
func NewPool(ctx context.Context, url string, maxConns int32, params map[string]string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.MaxConns = maxConns
	cfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", wrapConn(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", wrapConn(err))
	}
	return pool, nil
}

// Pool returns the DB's connection pool (for the lease and tools).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close stops accepting appends, commits (or fails) everything already
// appended and closes the pool. Appends made after Close fail with
// ErrUnavailable.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.q.Close()
		db.stopSizes()
		<-db.sizesDone
		db.pool.Close()
	})
	return nil
}

// Sizes returns the bytes of the store's tables and indexes as last
// measured (every 10 s), and 0 for the log: PostgreSQL's WAL is the
// cluster's, not the store's.
func (db *DB) Sizes() (dbBytes, walBytes int64) {
	return db.dbBytes.Load(), db.walBytes.Load()
}

func (db *DB) runSizes(ctx context.Context) {
	defer close(db.sizesDone)
	t := time.NewTicker(sizesInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			db.measureSizes(ctx)
		}
	}
}

// measureSizes sums the relations of the store's schema.
func (db *DB) measureSizes(ctx context.Context) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n)
	if err == nil {
		db.dbBytes.Store(n)
	}
}

// sqlstateFenced is raised by zizq_fence (migrations/0002_leader.sql).
const sqlstateFenced = "ZQ001"

// unavailableReason returns why err means the database cannot take writes
// now (it is unreachable, full, read-only, shutting down), or "".
func unavailableReason(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100":
			return "database or disk is full"
		case pe.Code == "25006":
			return "database is read-only"
		case len(pe.Code) == 2+3 && (pe.Code[:2] == "08" || pe.Code[:2] == "57"):
			return "database unreachable: " + pe.Message
		}
		return ""
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return "database unreachable"
	}
	return ""
}

// wrapConn turns an unreachable database into ErrUnavailable; other
// errors pass through.
func wrapConn(err error) error {
	if reason := unavailableReason(err); reason != "" {
		return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, reason, err)
	}
	return err
}

// wrapWrite gives a write error its context. A fenced transaction is
// ErrFenced, an unavailable database ErrUnavailable with the reason: that
// text is what clients see.
func wrapWrite(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == sqlstateFenced {
		return ErrFenced
	}
	if reason := unavailableReason(err); reason != "" {
		return fmt.Errorf("%w: %s", store.ErrUnavailable, reason)
	}
	return fmt.Errorf("%s: %w", what, err)
}

var _ store.Store = (*DB)(nil)
