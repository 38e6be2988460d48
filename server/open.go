package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/zizq/zizq/server/batchexpr"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// Options gather everything needed to start a server.
type Options struct {
	// OpenStore opens the server's store (required): the caller chooses
	// which. The server calls it once, from its start in the background;
	// onCommit is the metrics' hook, which the store must call after each
	// of its transactions (chained with any hook of the caller's).
	OpenStore func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error)
	Engine    core.EngineConfig
	HTTP      Config
	// PayloadCacheBytes bounds the core's cache of recent enqueues' payloads
	// (0: core.DefaultPayloadCacheBytes).
	PayloadCacheBytes int64
	// PayloadCacheHeap is the live heap that cache shares with the
	// engine's jobs (core.Options.PayloadCacheHeap; 0: a fixed bound).
	PayloadCacheHeap int64
	Clock            clock.Clock  // nil: the real clock
	Logger           *slog.Logger // nil: slog.Default()
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
	return o
}

// Start returns a server at once; its core opens the store
// (opts.OpenStore), returns the last run's in-flight jobs to ready and rebuilds the
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
	opts.Engine.OnExpire = chainExpire(opts.Engine.OnExpire, s.metrics.expiries.onExpire)
	s.core = core.Start(ctx, core.Options{
		Open: func(ctx context.Context) (core.Store, error) {
			if opts.OpenStore == nil {
				return nil, errNoStore
			}
			return opts.OpenStore(ctx, s.metrics.onCommit)
		},
		Engine:            opts.Engine,
		LeaseHeld:         opts.LeaseHeld,
		PayloadCacheBytes: opts.PayloadCacheBytes,
		PayloadCacheHeap:  opts.PayloadCacheHeap,
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

// errNoStore fails the start of a server given no store to open.
var errNoStore = errors.New("no store: Options.OpenStore is not set")
