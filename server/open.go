package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/zizq/zizq/server/batchexpr"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// Options gather everything needed to start a server on a data directory.
type Options struct {
	DataDir string
	Store   sqlite.Options
	Engine  core.EngineConfig
	HTTP    Config
	// PayloadCacheBytes bounds the core's cache of recent enqueues' payloads
	// (0: core.DefaultPayloadCacheBytes).
	PayloadCacheBytes int64
	Clock             clock.Clock  // nil: the real clock
	Logger            *slog.Logger // nil: slog.Default()

	// OpenStore, when set, opens the store in place of SQLite in DataDir
	// (a cluster's PostgreSQL store); onCommit is the metrics' hook of its
	// transactions.
	OpenStore func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error)
	// Role, when set, tells the server's place in its cluster, for /stats
	// and /metrics; nil is a lone server, its own leader.
	Role func() Role
	// LeaseHeld, when set, reports whether the server may still hand jobs
	// out: a leader that may have lost its lease writes no more frames.
	LeaseHeld func() bool
	// Started, when set, is when the process started: a cluster's leader
	// starts a server for each term, and its uptime is still the
	// process's. Zero means now.
	Started time.Time

	// BatchSandbox tunes the worker processes that run batch programs
	// (zero fields: the defaults; see batchexpr.SandboxOptions).
	BatchSandbox batchexpr.SandboxOptions

	// beforeRestore, when set, runs once the store is open and before the
	// engine is rebuilt (tests hold the start there).
	beforeRestore func(context.Context)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Store.Logger = o.Logger
	return o
}

// Start returns a server over opts.DataDir at once; its core opens the
// store, returns the last run's in-flight jobs to ready and rebuilds the
// engine in the background. Serve it straight away: it answers /health
// while it starts and everything once Ready is closed. If the start fails,
// Serve returns its error. CloseStore (after Serve) also ends a start still
// running.
func Start(ctx context.Context, opts Options) *Server {
	opts = opts.withDefaults()
	s := newServer(opts.HTTP, opts.Clock, opts.Logger)
	if opts.Role != nil {
		s.role = opts.Role
	}
	if !opts.Started.IsZero() {
		s.started = opts.Started
	}
	opts.Engine.OnDispatch = chainDispatch(opts.Engine.OnDispatch, s.metrics.onDispatch)
	opts.Store.OnCommit = chainCommit(opts.Store.OnCommit, s.metrics.onCommit)
	s.core = core.Start(ctx, core.Options{
		Open: func(ctx context.Context) (core.Store, error) {
			if opts.OpenStore != nil {
				return opts.OpenStore(ctx, s.metrics.onCommit)
			}
			return sqlite.Open(ctx, opts.DataDir, opts.Store)
		},
		Engine:            opts.Engine,
		LeaseHeld:         opts.LeaseHeld,
		PayloadCacheBytes: opts.PayloadCacheBytes,
		Clock:             opts.Clock,
		Logger:            opts.Logger,
		BeforeRestore:     opts.beforeRestore,
		MaxPayloadBytes:   opts.HTTP.MaxBodyBytes,
		BatchSandbox:      opts.BatchSandbox,
	})
	go s.runReadyHooks()
	return s
}

// Open is Start, waiting for the start to end: the server returned serves
// every request. Close it with CloseStore.
func Open(ctx context.Context, opts Options) (*Server, error) {
	s := Start(ctx, opts)
	if err := s.core.Wait(ctx); err != nil {
		_ = s.CloseStore()
		return nil, err
	}
	return s, nil
}

// CloseStore closes the store; call it after Serve returns. It ends a start
// still in progress first.
func (s *Server) CloseStore() error {
	err := s.core.Close()
	<-s.hooksDone
	return err
}

// DB exposes the SQLite store (for tests and maintenance commands); nil
// before the server is ready.
func (s *Server) DB() *sqlite.DB {
	db, _ := s.core.Store().(*sqlite.DB)
	return db
}

// Core returns the server's core service.
func (s *Server) Core() *core.Service { return s.core }

func chainDispatch(a, b func(store.Job, time.Time, int64)) func(store.Job, time.Time, int64) {
	if a == nil {
		return b
	}
	return func(j store.Job, at time.Time, waitingSince int64) {
		a(j, at, waitingSince)
		b(j, at, waitingSince)
	}
}

func chainCommit(a, b func(store.CommitInfo)) func(store.CommitInfo) {
	if a == nil {
		return b
	}
	return func(c store.CommitInfo) {
		a(c)
		b(c)
	}
}
