package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// Options gather everything needed to start a server on a data directory.
type Options struct {
	DataDir string
	Store   sqlite.Options
	Engine  engine.Config
	HTTP    Config
	Clock   clock.Clock  // nil: the real clock
	Logger  *slog.Logger // nil: slog.Default()

	// beforeRestore, when set, runs once the store is open and before the
	// engine is rebuilt (tests hold the start there).
	beforeRestore func(context.Context)
}

// journal adapts the store's writer to the engine.
type journal struct{ db *sqlite.DB }

func (j journal) Append(ops ...store.Op) engine.Waiter { return j.db.Append(ops...) }

// Open opens the store, returns jobs left in flight by the last run to
// ready, rebuilds the engine from the store and returns a server ready to
// Serve (Start does the same in the background). Close it to close the
// store.
func Open(ctx context.Context, opts Options) (*Server, error) {
	s := Start(ctx, opts)
	if err := s.awaitStart(ctx); err != nil {
		_ = s.CloseStore()
		return nil, err
	}
	return s, nil
}

func restore(ctx context.Context, db *sqlite.DB, opts Options) (*engine.Engine, error) {
	requeued, err := db.RecoverInFlight(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover in-flight jobs: %w", err)
	}
	budgets, err := db.Budgets(ctx)
	if err != nil {
		return nil, fmt.Errorf("load budgets: %w", err)
	}
	var jobs []store.Job
	if err := db.LiveJobs(ctx, func(j store.Job) error { jobs = append(jobs, j); return nil }); err != nil {
		return nil, fmt.Errorf("load jobs: %w", err)
	}
	var purges []engine.Purge
	if err := db.PurgeSchedule(ctx, func(id string, at int64) error {
		purges = append(purges, engine.Purge{ID: id, At: at})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("load purge schedule: %w", err)
	}
	// IDs sort after every ID the store ever held, whatever the clock says.
	maxID, err := db.MaxJobID(ctx)
	if err != nil {
		return nil, err
	}
	ids := jobid.New(opts.Clock.Now)
	ids.Observe(maxID)
	e := engine.New(opts.Engine, opts.Clock, journal{db}, ids)
	if err := e.Restore(budgets, jobs, purges); err != nil {
		return nil, err
	}
	opts.Logger.Info("engine restored", "jobs", len(jobs), "budgets", len(budgets), "requeued", requeued)
	return e, nil
}

// CloseStore closes the store; call it after Serve returns. It ends a start
// still in progress first.
func (s *Server) CloseStore() error {
	s.life.cancel()
	<-s.life.done
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

// DB exposes the store (for tests and maintenance commands).
func (s *Server) DB() *sqlite.DB { return s.db }
